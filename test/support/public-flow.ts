import type { RunningSandbox } from '@baton/sandbox';
import {
  codeChallengeS256,
  createCodeVerifier,
  routes,
  sessionCreateResponseSchema,
  type SessionCreateResponse,
} from '@baton/shared';
import { Agent, fetch, type Response } from 'undici';
import { expect } from 'vitest';
import type { TestCertificate, TlsTerminator } from './tls.ts';
import { CLIENT_ID, CLIENT_SECRET, EXTENSION_REDIRECT, startWorld } from './world.ts';

/** The public origin the production tests give the broker (behind a TLS-terminating balancer). */
export const PUBLIC_URL = 'https://broker.baton.test';
/** The production broker's own secrets, fixed so that a test can grep its output for them. */
export const PRODUCTION_SECRETS = {
  SESSION_SECRET: 'production-tests-session-secret-0123456789abcdef',
  TOKEN_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
} as const;

/**
 * A production broker's whole environment (NODE_ENV=production, https everywhere, one trusted
 * proxy): the provider at `providerUrl` (TLS, its certificate trusted through `caFile`), a Redis.
 */
export function productionEnv(options: {
  providerUrl: string;
  redisUrl: string;
  caFile: string;
}): Record<string, string> {
  return {
    NODE_ENV: 'production',
    AUTH_URL: options.providerUrl,
    CLIENT_ID,
    CLIENT_SECRET,
    PUBLIC_URL,
    API_URL_ALLOWLIST: options.providerUrl,
    EXTENSION_REDIRECT_URLS: EXTENSION_REDIRECT,
    ...PRODUCTION_SECRETS,
    REDIS_URL: options.redisUrl,
    TRUST_PROXY: '1',
    NODE_EXTRA_CA_CERTS: options.caFile,
  };
}
const FORWARDED = { 'x-forwarded-proto': 'https' };

/**
 * A browser behind the load balancer of a production broker: it sends the balancer's
 * X-Forwarded-Proto to the broker's own socket, keeps the broker's cookies, and trusts the test
 * certificate the provider (the sandbox behind TLS) presents.
 */
export class BalancedClient {
  readonly #agent: Agent;
  readonly #cookies = new Map<string, string>();
  readonly brokerUrl: string;

  constructor(brokerUrl: string, ca: string) {
    this.brokerUrl = brokerUrl;
    this.#agent = new Agent({ connect: { ca } });
  }

  /** A broker URL as the public sees it (PUBLIC_URL), sent to the broker's own socket. */
  async toBroker(
    pathAndQuery: string,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ): Promise<Response> {
    const cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(new URL(pathAndQuery, this.brokerUrl), {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: { ...FORWARDED, ...(cookie ? { cookie } : {}), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const [name = '', ...value] = pair.split('=');
      this.#cookies.set(name.trim(), value.join('='));
    }
    return response;
  }

  /** The provider, over TLS. */
  provider(url: string): Promise<Response> {
    return fetch(url, { redirect: 'manual', dispatcher: this.#agent });
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/**
 * The whole flow against a production broker, asserting each step: ready with HSTS, /auth/start
 * (a __Host- Secure cookie), the provider's consent over TLS, the callback, POST /session, and a
 * proxied users.me. Returns the session.
 */
export async function productionFlow(
  client: BalancedClient,
  sandbox: RunningSandbox,
  providerUrl: string,
): Promise<SessionCreateResponse> {
  const ready = await client.toBroker(routes.readyz);
  expect(ready.status).toBe(200);
  expect(ready.headers.get('strict-transport-security')).toContain('max-age=');

  const verifier = createCodeVerifier();
  const start = await client.toBroker(
    `${routes.authStart}?${new URLSearchParams({
      locale: 'nl',
      redirect_uri: EXTENSION_REDIRECT,
      code_challenge: await codeChallengeS256(verifier),
      code_challenge_method: 'S256',
    })}`,
  );
  expect(start.status).toBe(302);
  expect(start.headers.getSetCookie().join()).toMatch(/^__Host-baton\.auth=.*; Secure/);
  const authorize = new URL(start.headers.get('location')!);
  expect(authorize.origin).toBe(providerUrl);

  sandbox.sandbox.control.setConsent({ mode: 'approve' });
  const approved = await client.provider(authorize.href);
  expect(approved.status).toBe(302);
  const callback = new URL(approved.headers.get('location')!);
  expect(callback.origin).toBe(PUBLIC_URL);

  const handedOff = await client.toBroker(`${callback.pathname}${callback.search}`);
  expect(handedOff.status).toBe(302);
  const result = new URL(handedOff.headers.get('location')!);
  expect(result.href.startsWith(EXTENSION_REDIRECT)).toBe(true);
  const handoff = result.searchParams.get('handoff');
  expect(handoff).not.toBeNull();

  const created = await client.toBroker(routes.session, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ handoff, code_verifier: verifier }),
  });
  expect(created.status).toBe(201);
  const session = sessionCreateResponseSchema.parse(await created.json());
  expect(session.connection.api_origin).toBe(providerUrl);

  const me = await client.toBroker(routes.proxy(session.connection.id, 'users.me'), {
    headers: { authorization: `Bearer ${session.session_token}` },
  });
  expect(me.status).toBe(200);
  expect(await me.json()).toMatchObject({ email: expect.stringContaining('@') });
  return session;
}

/** The provider as production sees it: the sandbox behind a TLS terminator with a test certificate. */
export interface TlsProvider {
  certificate: TestCertificate;
  sandbox: RunningSandbox;
  tls: TlsTerminator;
  close(): Promise<void>;
}

/**
 * A world's provider behind TLS (startWorld's `tls`), for test/image/image.test.ts until it starts
 * the world itself; its Redis goes unused there.
 */
export async function startTlsProvider(): Promise<TlsProvider> {
  const world = await startWorld({ brokers: { processes: 0 }, tls: true, publicUrl: PUBLIC_URL });
  return {
    certificate: world.tls.certificate,
    sandbox: world.sandbox,
    tls: world.tls.terminator,
    close: () => world.close(),
  };
}
