import {
  sessionCreateResponseSchema,
  type Locale,
  type SessionCreateResponse,
} from '@baton/shared';
import { Client, consent, redeemAt, startAuth, type Flow } from './client.ts';
import type { World } from './world.ts';

/**
 * The flow client (client.ts) for a world of one in-process broker: a browser with a cookie jar
 * and an address of its own, whose one instance is that broker. The authorization window's steps
 * are client.ts's (startAuth, consent, redeemAt); these only fill in the world.
 */
export class TestBrowser extends Client {
  constructor(world: World) {
    super({ publicUrl: world.broker.url, instances: [world.broker.url] }, { connections: 4 });
  }

  /** A GET with this browser's cookies and redirects not followed. */
  get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.fetch(url, { headers });
  }
}

export type StartedFlow = Flow;

/** GET /auth/start as the extension's launchWebAuthFlow would, stopping at the provider. */
export function startFlow(
  _world: World,
  browser: TestBrowser,
  locale: Locale = 'nl',
): Promise<StartedFlow> {
  return startAuth(browser, 0, { locale });
}

/** The provider's answer for a started flow, with consent scripted at the sandbox. */
export const providerCallback = consent;

/** The whole flow up to the extension's redirect URL: `?handoff=` or `?error=`. */
export async function authorize(
  world: World,
  options: { browser?: TestBrowser; licenseId?: string; locale?: Locale } = {},
): Promise<{ result: URL; verifier: string }> {
  const browser = options.browser ?? new TestBrowser(world);
  world.sandbox.sandbox.control.setConsent({
    mode: 'approve',
    ...(options.licenseId ? { licenseId: options.licenseId } : {}),
  });
  const flow = await startFlow(world, browser, options.locale);
  const { final } = await browser.navigate(flow.authorizeUrl.href);
  return { result: final, verifier: flow.verifier };
}

/** POST /session with the handoff and the PKCE verifier (and a session to join). */
export function redeem(
  world: World,
  handoff: string,
  verifier: string,
  sessionToken?: string,
): Promise<Response> {
  return redeemAt(new TestBrowser(world), 0, handoff, verifier, sessionToken);
}

/** Connect a license end to end and return the broker's answer to POST /session. */
export async function connect(
  world: World,
  options: { licenseId?: string; sessionToken?: string } = {},
): Promise<SessionCreateResponse> {
  const { result, verifier } = await authorize(world, options);
  const handoff = result.searchParams.get('handoff');
  if (handoff === null) throw new Error(`flow ended with ${result.search}`);
  const response = await redeem(world, handoff, verifier, options.sessionToken);
  if (response.status !== 201) throw new Error(`POST /session answered ${response.status}`);
  return sessionCreateResponseSchema.parse(await response.json());
}

/** A broker call with the session token. */
export function call(
  world: World,
  path: string,
  sessionToken: string,
  init: RequestInit = {},
): Promise<Response> {
  return fetch(new URL(path, world.broker.url), {
    ...init,
    headers: { authorization: `Bearer ${sessionToken}`, ...(init.headers ?? {}) },
  });
}

/** Requests the world's sandbox saw at its token endpoint (exchanges and refreshes, failed or not). */
export function tokenRequests(world: World): number {
  return world.sandbox.sandbox.control
    .requests()
    .filter((request) => request.path.endsWith('/oauth2/access_token')).length;
}
