import {
  codeChallengeS256,
  createCodeVerifier,
  routes,
  sessionCreateResponseSchema,
  type Locale,
  type SessionCreateResponse,
} from '@baton/shared';
import { connect as netConnect } from 'node:net';
import { Agent, fetch, type Dispatcher } from 'undici';
import { EXTENSION_REDIRECT } from './broker-env.ts';

/**
 * Several brokers behind one public origin, as behind a load balancer: the browser and the
 * provider only know `publicUrl`; a test picks which instance answers each request.
 */
export interface Endpoint {
  publicUrl: string;
  instances: readonly string[];
}

let lastAddress = 0;
/**
 * A loopback source address of its own (127.1.x.y: every 127/8 address is the loopback interface
 * on Linux), so that each client is a separate visitor to the broker's per-address rate limits.
 */
export function loopbackAddress(): string {
  const n = lastAddress++;
  return `127.1.${Math.floor(n / 250) % 250}.${(n % 250) + 1}`;
}

export interface Answer {
  /** 0 when the connection closed without an HTTP answer. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Which instance answers: a fixed index, or one per hop of a navigation. */
export type Via = number | ((hop: number) => number);

/**
 * A browser (or a script) from its own address: keep-alive connections, a cookie jar for the
 * broker's public host, and a choice of instance for every request.
 */
export class Client {
  readonly address: string;
  readonly cookies = new Map<string, string>();
  readonly agent: Agent;
  readonly #endpoint: Endpoint;

  constructor(endpoint: Endpoint, options: { address?: string; connections?: number } = {}) {
    this.#endpoint = endpoint;
    this.address = options.address ?? loopbackAddress();
    this.agent = new Agent({
      localAddress: this.address,
      connections: options.connections ?? 16,
      keepAliveTimeout: 4_000,
    });
  }

  get publicUrl(): string {
    return this.#endpoint.publicUrl;
  }

  instance(via: number): string {
    const url = this.#endpoint.instances[via % this.#endpoint.instances.length];
    if (url === undefined) throw new Error('no broker instance');
    return url;
  }

  /** Where a request for `url` (a path, or a URL on the public origin) goes on instance `via`. */
  target(url: string | URL, via: number): URL {
    const parsed = new URL(url, this.#endpoint.publicUrl);
    if (parsed.origin !== new URL(this.#endpoint.publicUrl).origin) return parsed;
    return new URL(`${parsed.pathname}${parsed.search}`, this.instance(via));
  }

  /** A request with manual redirects; the jar's cookies go to (and come from) the broker only. */
  async fetch(
    url: string | URL,
    init: {
      via?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      cookies?: boolean;
      /** Give up (reject) after this long: for a broker that might never answer. */
      timeoutMs?: number;
    } = {},
  ): Promise<Response> {
    const target = this.target(url, init.via ?? 0);
    const toBroker = this.#endpoint.instances.some(
      (instance) => new URL(instance).origin === target.origin,
    );
    const headers: Record<string, string> = { ...init.headers };
    if (toBroker && init.cookies !== false && this.cookies.size > 0)
      headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(target, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers,
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(init.timeoutMs) }),
      dispatcher: this.agent,
    });
    if (toBroker) {
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';');
        const [name = '', ...value] = pair.split('=');
        this.cookies.set(name.trim(), value.join('='));
      }
    }
    return response as unknown as Response;
  }

  /** Follows redirects until an answer that is not one, or the extension's redirect URL. */
  async navigate(url: string | URL, via: Via = 0): Promise<{ final: URL; response?: Response }> {
    let current = new URL(url, this.#endpoint.publicUrl);
    for (let hop = 0; hop < 10; hop++) {
      if (current.href.startsWith(EXTENSION_REDIRECT)) return { final: current };
      const response = await this.fetch(current, {
        via: typeof via === 'number' ? via : via(hop),
      });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || location === null) {
        return { final: current, response };
      }
      await response.body?.cancel();
      current = new URL(location, current);
    }
    throw new Error('too many redirects');
  }

  /** A request whose path goes out exactly as written (fetch would normalise it). */
  async raw(
    via: number,
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: string,
  ): Promise<Answer> {
    try {
      const response = await this.agent.request({
        origin: this.instance(via),
        method: method as Dispatcher.HttpMethod,
        path,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      return {
        status: response.statusCode,
        headers: response.headers,
        body: await response.body.text(),
      };
    } catch {
      return { status: 0, headers: {}, body: '' };
    }
  }

  /**
   * Bytes written as they are to a fresh connection (for what no HTTP client will send: CR/LF or
   * raw UTF-8 in the request line). Resolves with the status line's code, or 0 when the broker
   * closed the connection without one.
   */
  socket(via: number, bytes: string | Buffer): Promise<Answer> {
    const { hostname, port } = new URL(this.instance(via));
    return new Promise((resolve) => {
      const socket = netConnect({ host: hostname, port: Number(port), localAddress: this.address });
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', () => {});
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('latin1');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
        const [head = '', ...rest] = text.split('\r\n\r\n');
        const headers: Record<string, string> = {};
        for (const line of head.split('\r\n').slice(1)) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        resolve({ status, headers, body: rest.join('\r\n\r\n') });
      });
      // The request says Connection: close, so the broker closes once it has answered; a broker
      // that neither answers nor closes within 10 s counts as no answer.
      socket.setTimeout(10_000, () => socket.destroy());
      socket.write(bytes);
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

export interface Flow {
  verifier: string;
  challenge: string;
  /** The provider's authorize URL the broker redirected to. */
  authorizeUrl: URL;
  state: string;
}

/** GET /auth/start as the extension's auth window would, answered by instance `via`. */
export async function startAuth(
  client: Client,
  via = 0,
  options: { locale?: Locale; redirectUri?: string } = {},
): Promise<Flow> {
  const verifier = createCodeVerifier();
  const challenge = await codeChallengeS256(verifier);
  const url = new URL(routes.authStart, client.publicUrl);
  url.search = new URLSearchParams({
    locale: options.locale ?? 'nl',
    redirect_uri: options.redirectUri ?? EXTENSION_REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  const response = await client.fetch(url, { via });
  if (response.status !== 302) throw new Error(`/auth/start answered ${response.status}`);
  const authorizeUrl = new URL(response.headers.get('location')!);
  return { verifier, challenge, authorizeUrl, state: authorizeUrl.searchParams.get('state')! };
}

/** The provider's redirect to the broker's callback for a started flow (consent is scripted). */
export async function consent(flow: Flow): Promise<URL> {
  const response = await fetch(flow.authorizeUrl, { redirect: 'manual' });
  await response.body?.cancel();
  if (response.status !== 302) throw new Error(`authorize answered ${response.status}`);
  return new URL(response.headers.get('location')!);
}

/** POST /session on instance `via`. */
export function redeemAt(
  client: Client,
  via: number,
  handoff: string,
  verifier: string,
  sessionToken?: string,
): Promise<Response> {
  return client.fetch(routes.session, {
    via,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(sessionToken ? { authorization: `Bearer ${sessionToken}` } : {}),
    },
    body: JSON.stringify({ handoff, code_verifier: verifier }),
  });
}

export interface Connected {
  token: string;
  id: string;
  response: SessionCreateResponse;
}

/**
 * A whole authorization across instances: start on one, callback on another, redeem on a third.
 * `apiUrl` may replace the api_url the provider sent (to route a license through a test proxy).
 */
export async function connectVia(
  client: Client,
  options: {
    start?: number;
    callback?: number;
    redeem?: number;
    sessionToken?: string;
    apiUrl?: string;
  } = {},
): Promise<Connected> {
  const flow = await startAuth(client, options.start ?? 0);
  const callback = await consent(flow);
  if (options.apiUrl !== undefined) callback.searchParams.set('api_url', options.apiUrl);
  const { final } = await client.navigate(callback, options.callback ?? 1);
  const handoff = final.searchParams.get('handoff');
  if (handoff === null) throw new Error(`flow ended with ${final.href}`);
  const response = await redeemAt(
    client,
    options.redeem ?? 2,
    handoff,
    flow.verifier,
    options.sessionToken,
  );
  if (response.status !== 201) throw new Error(`POST /session answered ${response.status}`);
  const body = sessionCreateResponseSchema.parse(await response.json());
  return { token: body.session_token, id: body.connection.id, response: body };
}

/** A proxied call with the session token, on instance `via`. */
export function callApi(
  client: Client,
  via: number,
  session: { token: string; id: string },
  path = 'users.me',
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Response> {
  return client.fetch(routes.proxy(session.id, path), {
    via,
    ...init,
    headers: { authorization: `Bearer ${session.token}`, ...init.headers },
  });
}
