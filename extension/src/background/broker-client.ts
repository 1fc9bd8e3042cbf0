import {
  BROKER_ERROR_HEADER,
  connectionsResponseSchema,
  errorBodySchema,
  parseRetryAfter,
  redirectCheckResponseSchema,
  routes,
  sessionCreateResponseSchema,
  type Connection,
  type SessionCreateRequest,
  type SessionCreateResponse,
} from '@baton/shared';
import { ProblemError, type Problem, type ProblemCode } from '../problems.ts';
import type { ApiCall } from './api-request.ts';

/**
 * The broker's HTTP API as the background uses it. Every failure leaves here as a
 * `ProblemError` with a code (translated once, at this boundary): a network failure is
 * `broker_unreachable`; an answer marked with the broker's error header keeps the broker's code;
 * an unmarked answer to a proxied call is the license API's (`upstream_refused`), never a reason
 * to end the session; anything else is classified by status. The session token is only ever sent
 * to `baseUrl`.
 */
export interface BrokerClientOptions {
  /** Normalised broker URL, no trailing slash. */
  readonly baseUrl: string;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly timeoutMs?: number;
}

export interface BrokerClient {
  readonly baseUrl: string;
  /** Resolves when the broker answers at all (any status); for a clear "unreachable" early. */
  ping(): Promise<void>;
  /**
   * Whether the broker accepts this redirect URL, asked before the authorization window opens;
   * true from a broker that predates the question (404), which the flow then finds out itself.
   */
  acceptsRedirect(redirectUri: string): Promise<boolean>;
  createSession(body: SessionCreateRequest, token: string | null): Promise<SessionCreateResponse>;
  listConnections(token: string): Promise<Connection[]>;
  /** The provider's user record, through the broker's proxy; its shape is not specified. */
  getUser(token: string, connectionId: string): Promise<unknown>;
  deleteConnection(token: string, connectionId: string): Promise<void>;
  deleteSession(token: string): Promise<void>;
  /**
   * A license API call through the proxy (the integrator's API, api.ts): the license API's answer
   * whatever its status, its body unread; the broker's own errors and redirects as problems.
   */
  callApi(token: string, call: ApiCall): Promise<Response>;
}

const DEFAULT_TIMEOUT_MS = 20_000;

export function createBrokerClient(options: BrokerClientOptions): BrokerClient {
  const { baseUrl, now } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  /** One request to the broker; no answer at all becomes `timeout` or `broker_unreachable`. */
  async function reach(path: string, init: RequestInit): Promise<Response> {
    try {
      return await options.fetch(`${baseUrl}${path}`, {
        ...init,
        credentials: 'omit',
        cache: 'no-store',
        // A redirect could carry the bearer elsewhere: treat it as an answer, not follow it.
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new ProblemError(
        { code: isTimeout(error) ? 'timeout' : 'broker_unreachable' },
        { cause: error },
      );
    }
  }

  async function send(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    token: string | null,
    body?: unknown,
    answeredBy: AnsweredBy = 'broker',
  ): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (token !== null) headers['Authorization'] = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await reach(path, {
      method,
      headers,
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new ProblemError(await problemFromResponse(response, now, answeredBy));
    return response;
  }

  async function json(response: Response): Promise<unknown> {
    try {
      return await response.json();
    } catch (error) {
      throw new ProblemError({ code: 'unexpected' }, { cause: error });
    }
  }

  return {
    baseUrl,
    async ping() {
      await reach(routes.healthz, {});
    },
    async acceptsRedirect(redirectUri) {
      const query = new URLSearchParams({ redirect_uri: redirectUri });
      const response = await reach(`${routes.redirectCheck}?${query}`, {
        headers: { Accept: 'application/json' },
      });
      if (response.status === 404) return true;
      if (!response.ok) throw new ProblemError(await problemFromResponse(response, now));
      const parsed = redirectCheckResponseSchema.safeParse(await json(response));
      if (!parsed.success) throw new ProblemError({ code: 'unexpected' });
      return parsed.data.allowed;
    },
    async createSession(body, token) {
      const response = await send('POST', routes.session, token, body);
      const parsed = sessionCreateResponseSchema.safeParse(await json(response));
      if (!parsed.success) throw new ProblemError({ code: 'unexpected' });
      return parsed.data;
    },
    async listConnections(token) {
      const response = await send('GET', routes.connections, token);
      const parsed = connectionsResponseSchema.safeParse(await json(response));
      if (!parsed.success) throw new ProblemError({ code: 'unexpected' });
      return parsed.data.connections;
    },
    async getUser(token, connectionId) {
      const path = routes.proxy(connectionId, 'users.me');
      return json(await send('GET', path, token, undefined, 'upstream'));
    },
    async deleteConnection(token, connectionId) {
      await send('DELETE', routes.connection(connectionId), token);
    },
    async deleteSession(token) {
      await send('DELETE', routes.session, token);
    },
    async callApi(token, call) {
      const headers: Record<string, string> = {
        Accept: 'application/json',
        Authorization: `Bearer ${token}`,
      };
      if (call.body !== null) headers['Content-Type'] = 'application/json';
      const path = routes.proxy(call.connectionId, call.path);
      const response = await reach(call.query === '' ? path : `${path}?${call.query}`, {
        method: call.method,
        headers,
        ...(call.body !== null && { body: call.body }),
      });
      const brokers = !response.ok && response.headers.has(BROKER_ERROR_HEADER);
      if (brokers || response.type === 'opaqueredirect')
        throw new ProblemError(await problemFromResponse(response, now, 'upstream'));
      return response;
    },
  };
}

function isTimeout(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'TimeoutError';
}

/**
 * Who answers a call when the broker adds no error of its own: the broker itself, or (a proxied
 * call) the license API, whose answer passes through.
 */
type AnsweredBy = 'broker' | 'upstream';

/**
 * Translates a non-2xx answer into a problem; exported for its table test. Only an answer that
 * carries the broker's error header is the broker's own error: a body that merely looks like one
 * (a license API's, a proxy's in front of the broker) is classified by status, and through the
 * proxy it is the license API's `upstream_refused`.
 */
export async function problemFromResponse(
  response: Response,
  now: () => number,
  answeredBy: AnsweredBy = 'broker',
): Promise<Problem> {
  const retryAt = parseRetryAfter(response.headers.get('Retry-After'), now());
  const withRetry = (code: ProblemCode): Problem =>
    retryAt === undefined ? { code } : { code, retryAt };
  const mark = response.headers.get(BROKER_ERROR_HEADER);
  if (mark !== null) {
    const parsed = errorBodySchema.shape.error.safeParse(mark);
    await response.body?.cancel();
    return withRetry(parsed.success ? parsed.data : 'unexpected');
  }
  await response.body?.cancel();
  if (answeredBy === 'upstream' && response.type !== 'opaqueredirect')
    return { ...withRetry('upstream_refused'), status: response.status };
  return withRetry(problemCodeForStatus(response.status, response.type));
}

function problemCodeForStatus(status: number, type: ResponseType): ProblemCode {
  if (type === 'opaqueredirect' || (status >= 300 && status < 400)) return 'unexpected';
  // A 401 without the broker's mark is not the broker's word that the session is gone.
  if (status === 401) return 'unexpected';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  // Without the broker's JSON body, a gateway error means the broker itself is not there.
  if (status === 502 || status === 503 || status === 504) return 'broker_unreachable';
  if (status >= 500) return 'server_error';
  return 'unexpected';
}
