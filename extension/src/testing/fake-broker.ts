import {
  BROKER_ERROR_HEADER,
  codeChallengeS256,
  ERROR_STATUS,
  routes,
  type Connection,
  type DisconnectedReason,
  type ErrorCode,
} from '@baton/shared';

/**
 * An in-memory broker behind an injected `fetch`, for the background's unit tests: it keeps
 * sessions, one-time handoffs (checking the PKCE verifier against the challenge the flow sent to
 * /auth/start), connections and user records, and records every request it receives. Tests can
 * make any route fail, or hold an answer until they release it (no sleeps).
 */
export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly path: string;
  readonly authorization: string | null;
  readonly body: unknown;
  readonly credentials: RequestCredentials | undefined;
}

export interface FakeLicense {
  /** The connection id the broker gives this license within a session. */
  readonly connectionId: string;
  readonly user: unknown;
  readonly apiOrigin?: string;
}

interface StoredConnection {
  connection: Connection;
  user: unknown;
}

type Override = (request: RecordedRequest) => Response | Promise<Response> | undefined;

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

/** An error of the broker's own: its JSON body, and the header that marks it as the broker's. */
export function errorResponse(code: ErrorCode, headers: Record<string, string> = {}) {
  return jsonResponse(
    ERROR_STATUS[code],
    { error: code, message: `fake ${code}` },
    { [BROKER_ERROR_HEADER]: code, ...headers },
  );
}

export class FakeBroker {
  readonly requests: RecordedRequest[] = [];
  /** When true, every request fails like a closed port. */
  unreachable = false;
  /** The extension redirect URLs it accepts (EXTENSION_REDIRECT_URLS); null: any. */
  acceptedRedirects: readonly string[] | null = null;
  private readonly sessions = new Map<string, Map<string, StoredConnection>>();
  private readonly handoffs = new Map<string, { license: FakeLicense; challenge: string }>();
  private readonly overrides: {
    method: string;
    path: string | RegExp;
    once: boolean;
    answer: Override;
  }[] = [];
  private counter = 0;

  readonly baseUrl: string;
  private readonly now: () => number;

  constructor(baseUrl: string, now: () => number = () => Date.UTC(2025, 0, 15, 9, 30)) {
    this.baseUrl = baseUrl;
    this.now = now;
  }

  /** What the broker's /auth/callback would do: remember a one-time handoff for `license`. */
  issueHandoff(license: FakeLicense, challenge: string): string {
    this.counter += 1;
    const handoff = `handoff-${this.counter}-${license.connectionId}`;
    this.handoffs.set(handoff, { license, challenge });
    return handoff;
  }

  /** Seeds a session directly (as if earlier flows had happened). */
  seedSession(
    token: string,
    licenses: readonly (FakeLicense & {
      status?: 'connected' | 'disconnected';
      reason?: DisconnectedReason;
    })[],
  ): void {
    const connections = new Map<string, StoredConnection>();
    for (const license of licenses) {
      const stored = this.connectionFor(license);
      if (license.status === 'disconnected') {
        stored.connection = {
          ...stored.connection,
          status: 'disconnected',
          access_expires_at: null,
          ...(license.reason !== undefined && { disconnected_reason: license.reason }),
        };
      }
      connections.set(license.connectionId, stored);
    }
    this.sessions.set(token, connections);
  }

  /** Marks a connection disconnected, as a failed refresh on the broker would. */
  disconnect(token: string, connectionId: string, reason?: DisconnectedReason): void {
    const stored = this.sessions.get(token)?.get(connectionId);
    if (stored === undefined) throw new Error(`no connection ${connectionId} in ${token}`);
    stored.connection = {
      ...stored.connection,
      status: 'disconnected',
      access_expires_at: null,
      ...(reason !== undefined && { disconnected_reason: reason }),
    };
  }

  sessionTokens(): string[] {
    return [...this.sessions.keys()];
  }

  connectionIds(token: string): string[] {
    return [...(this.sessions.get(token)?.keys() ?? [])];
  }

  /** Answers `method path` with `answer` instead of the normal behaviour. */
  override(
    method: string,
    path: string | RegExp,
    answer: Override,
    options: { once?: boolean } = {},
  ) {
    this.overrides.push({ method, path, once: options.once ?? false, answer });
  }

  fail(
    method: string,
    path: string | RegExp,
    response: () => Response,
    options: { once?: boolean } = {},
  ) {
    this.override(method, path, () => response(), options);
  }

  /**
   * Answers the next `method path` as things stand when it arrives, but delivers that answer only
   * on `release()` (a response in flight); `reached` resolves when the request arrives.
   */
  hold(method: string, path: string | RegExp) {
    let release!: () => void;
    let arrived!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    this.override(
      method,
      path,
      (request) => {
        arrived();
        const answer = this.handle(request);
        return released.then(() => answer);
      },
      { once: true },
    );
    return { reached, release };
  }

  requestsTo(method: string, path: string | RegExp): RecordedRequest[] {
    return this.requests.filter((r) => r.method === method && matches(r.path, path));
  }

  readonly fetch: typeof fetch = async (input, init) => {
    const url = new URL(
      typeof input === 'string' ? input : input instanceof URL ? input.href : input.url,
    );
    const headers = new Headers(init?.headers);
    const bodyText = typeof init?.body === 'string' ? init.body : null;
    const request: RecordedRequest = {
      method: init?.method ?? 'GET',
      url: url.href,
      path: url.pathname,
      authorization: headers.get('Authorization'),
      body: bodyText === null ? undefined : (JSON.parse(bodyText) as unknown),
      credentials: init?.credentials,
    };
    this.requests.push(request);
    if (this.unreachable || !url.href.startsWith(`${this.baseUrl}/`)) {
      throw new TypeError('Failed to fetch');
    }
    const index = this.overrides.findIndex(
      (o) => o.method === request.method && matches(request.path, o.path),
    );
    const override = this.overrides[index];
    if (override !== undefined) {
      if (override.once) this.overrides.splice(index, 1);
      const answer = await override.answer(request);
      if (answer !== undefined) return answer;
    }
    return this.handle(request);
  };

  private connectionFor(license: FakeLicense): StoredConnection {
    return {
      connection: {
        id: license.connectionId,
        status: 'connected',
        api_origin: license.apiOrigin ?? 'https://api.provider.example',
        connected_at: new Date(this.now()).toISOString(),
        access_expires_at: new Date(this.now() + 3_600_000).toISOString(),
      },
      user: license.user,
    };
  }

  private session(request: RecordedRequest): Map<string, StoredConnection> | undefined {
    const token = request.authorization?.replace(/^Bearer /, '');
    return token === undefined ? undefined : this.sessions.get(token);
  }

  private async handle(request: RecordedRequest): Promise<Response> {
    const { method, path } = request;
    if (method === 'GET' && path === routes.healthz) return jsonResponse(200, { status: 'ok' });
    if (method === 'GET' && path === routes.redirectCheck) {
      const uri = new URL(request.url).searchParams.get('redirect_uri') ?? '';
      return jsonResponse(200, {
        allowed: this.acceptedRedirects === null || this.acceptedRedirects.includes(uri),
      });
    }
    if (method === 'POST' && path === routes.session) return this.createSession(request);
    const session = this.session(request);
    if (session === undefined) return errorResponse('invalid_session');
    if (method === 'DELETE' && path === routes.session) {
      this.sessions.delete(request.authorization?.replace(/^Bearer /, '') ?? '');
      return new Response(null, { status: 204 });
    }
    if (method === 'GET' && path === routes.connections) {
      return jsonResponse(200, { connections: [...session.values()].map((s) => s.connection) });
    }
    const proxy = /^\/connections\/([^/]+)\/api\/(.*)$/.exec(path);
    if (proxy !== null) {
      const stored = session.get(decodeURIComponent(proxy[1] ?? ''));
      if (stored === undefined) return errorResponse('not_found');
      if (stored.connection.status === 'disconnected')
        return errorResponse('reauthorization_required');
      if (method === 'GET' && proxy[2] === 'users.me') return jsonResponse(200, stored.user);
      // Any other path is the license API's business: this one knows none (no broker mark).
      return jsonResponse(404, { error: 'no_such_path' });
    }
    const one = /^\/connections\/([^/]+)$/.exec(path);
    if (method === 'DELETE' && one !== null) {
      const id = decodeURIComponent(one[1] ?? '');
      if (!session.delete(id)) return errorResponse('not_found');
      return new Response(null, { status: 204 });
    }
    return errorResponse('not_found');
  }

  private async createSession(request: RecordedRequest): Promise<Response> {
    const body = request.body as { handoff?: string; code_verifier?: string } | undefined;
    const pending = body?.handoff === undefined ? undefined : this.handoffs.get(body.handoff);
    // Consumed before it is checked: a replay finds nothing.
    if (body?.handoff !== undefined) this.handoffs.delete(body.handoff);
    if (pending === undefined || body?.code_verifier === undefined)
      return errorResponse('invalid_grant');
    if ((await codeChallengeS256(body.code_verifier)) !== pending.challenge)
      return errorResponse('invalid_grant');
    let token = request.authorization?.replace(/^Bearer /, '');
    if (token === undefined || !this.sessions.has(token)) {
      this.counter += 1;
      token = `session-${this.counter}`;
      this.sessions.set(token, new Map());
    }
    const session = this.sessions.get(token);
    if (session === undefined) throw new Error('unreachable');
    const stored = this.connectionFor(pending.license);
    session.set(pending.license.connectionId, stored);
    return jsonResponse(201, { session_token: token, connection: stored.connection });
  }
}

function matches(path: string, pattern: string | RegExp): boolean {
  return typeof pattern === 'string' ? path === pattern : pattern.test(path);
}
