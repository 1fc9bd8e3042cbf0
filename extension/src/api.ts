import type {
  DisconnectedReason,
  PROXY_FRAMING_HEADERS,
  PROXY_METHODS,
  ProxyAnswerHeader,
} from '@baton/shared';
import type { BrokerCallCode } from './problems.ts';

/**
 * The API for the integrator's own code (docs/extending.md): an extension page or a content script
 * on a listed origin calls a license API path through the background and the broker, and gets the
 * license API's answer or a typed error; it may also hear what changes (`ApiChange`). Types only,
 * and the limits: the client (api-client.ts) imports nothing else, so a content script stays small.
 *
 * Each message is `{ type, data }` sent with `runtime.sendMessage`; its reply is the result itself
 * (`ApiResult`, `ApiConnectionsResult`). Changes come on a port (`API_CHANGES_PORT`). Nothing in a
 * reply or a change is a secret: no session token, no provider token, no broker header.
 */
export type ApiMethod = (typeof PROXY_METHODS)[number];

export interface ApiRequest {
  /**
   * A connection of the session (`api.connections`), as the broker names it: base64url characters
   * only (anything else, such as `.` or `..`, is refused as `invalid_request`).
   */
  readonly connectionId: string;
  readonly method: ApiMethod;
  /** The path below the license's api_url, without a leading slash: `users.me`, `users/42`. */
  readonly path: string;
  /** The query string's parameters; an array repeats the name. */
  readonly query?: Readonly<Record<string, string | readonly string[]>>;
  /** Sent as JSON (`Content-Type: application/json`); not with GET. */
  readonly body?: unknown;
}

/**
 * The license API's answer headers a caller may read: those the broker passes on
 * (`PROXY_ANSWER_HEADERS`), but for the body's framing.
 */
export type ApiAnswerHeader = Exclude<ProxyAnswerHeader, (typeof PROXY_FRAMING_HEADERS)[number]>;

export type ApiResult =
  | {
      /** The license API answered: its status says how (a 404 is its answer, not an error here). */
      readonly ok: true;
      readonly status: number;
      readonly headers: Readonly<Partial<Record<ApiAnswerHeader, string>>>;
      /** Parsed JSON for a JSON answer, else its text; null when it has no body. */
      readonly body: unknown;
    }
  | { readonly ok: false; readonly error: ApiError };

export interface ApiConnection {
  readonly id: string;
  readonly status: 'connected' | 'disconnected';
  /** The license API's origin, e.g. `https://api.provider.example`. */
  readonly apiOrigin: string;
  readonly disconnectedReason: DisconnectedReason | null;
}

export type ApiConnectionsResult =
  | { readonly ok: true; readonly connections: readonly ApiConnection[] }
  | { readonly ok: false; readonly error: ApiError };

/**
 * Why there is no answer from the license API: calling the broker failed (`BrokerCallCode` in
 * problems.ts: the broker's own codes, its answer carrying `Baton-Error`, or `permission_missing`,
 * `broker_unreachable`, `timeout`, `unexpected`; `invalid_request` is also the extension's, for a
 * request it refuses before it leaves), or the API's own:
 */
export type ApiErrorCode =
  | BrokerCallCode
  /** No session with the broker in use: the user must connect a license in the popup first. */
  | 'signed_out'
  /** The answer is larger than `API_MAX_ANSWER_BYTES`. */
  | 'answer_too_large'
  /** A content script on an origin the build does not list (WXT_API_ORIGINS). */
  | 'origin_not_allowed'
  /** The background did not answer (the extension was reloaded, or the message was refused). */
  | 'no_answer';

export interface ApiError {
  readonly code: ApiErrorCode;
  /** A sentence for the developer's console, not for users; it never holds request data. */
  readonly message: string;
  /** When the broker said to try again (`Retry-After`), as epoch milliseconds. */
  readonly retryAt?: number;
}

/** The messages of this API, as `runtime.sendMessage` carries them. */
export interface ApiMessageMap {
  'api.request': { request: ApiRequest; response: ApiResult };
  'api.connections': { request: null; response: ApiConnectionsResult };
}
export type ApiMessageType = keyof ApiMessageMap;
export type ApiHandlers = {
  [K in ApiMessageType]: (
    data: ApiMessageMap[K]['request'],
  ) => Promise<ApiMessageMap[K]['response']>;
};

/**
 * What changed in the session, as an open page hears it (`batonApi.onChange`): ids, status and
 * origins only, never a token, a session handle or a user record. Read `api.connections` (or call
 * the API) for more.
 */
export type ApiChange =
  /** A licence is connected: newly, or again after it was disconnected. */
  | { readonly kind: 'connected'; readonly connectionId: string; readonly apiOrigin: string }
  /** A licence is disconnected (the provider refused its refresh): the user must reconnect it. */
  | {
      readonly kind: 'disconnected';
      readonly connectionId: string;
      readonly apiOrigin: string;
      readonly reason: DisconnectedReason | null;
    }
  /** A licence is gone from the session (the user disconnected it in the popup). */
  | { readonly kind: 'removed'; readonly connectionId: string; readonly apiOrigin: string }
  /** The session ended (signed out, ended by the broker, another broker chosen): every licence with it. */
  | { readonly kind: 'signed_out' };

/** Whether changes come: `listening` once they do, `stopped` (with why) once they never will. */
export type ApiChangeStatus =
  { readonly state: 'listening' } | { readonly state: 'stopped'; readonly error: ApiError };

/**
 * The port a page opens (`runtime.connect({ name: API_CHANGES_PORT })`) to hear of changes, and
 * what the background sends on it: `api.listening` once it accepts the port, then one
 * `api.change` per change; `api.refused` (then it disconnects) for a content script on an origin
 * it does not list.
 */
export const API_CHANGES_PORT = 'baton.api.changes';
export type ApiChangesMessage =
  | { readonly type: 'api.listening' }
  | { readonly type: 'api.change'; readonly change: ApiChange }
  | { readonly type: 'api.refused'; readonly error: ApiError };

/** An answer is read up to this much: a message to a page is no place for more. */
export const API_MAX_ANSWER_BYTES = 1024 * 1024;
/** The query string, encoded. */
export const API_MAX_QUERY_LENGTH = 4096;

/** One sentence per code, the same for every caller. */
export const API_ERROR_MESSAGES: Record<ApiErrorCode, string> = {
  invalid_request: 'The request is not one the broker takes.',
  invalid_session: 'The broker no longer knows this session; connect a licence again.',
  invalid_grant: 'The broker refused the grant.',
  not_found: 'No such connection in this session.',
  reauthorization_required: 'This licence is disconnected; reconnect it in the popup.',
  upstream_unavailable: 'The license API did not answer.',
  upstream_too_large: 'The license API answered more than the broker passes on.',
  rate_limited: 'Too many requests; try again later.',
  server_error: 'The broker failed.',
  signed_out: 'No licence is connected; connect one in the popup first.',
  permission_missing: 'The extension may not reach the broker; grant it on the options page.',
  broker_unreachable: 'The broker cannot be reached.',
  timeout: 'The broker did not answer in time.',
  answer_too_large: `The answer is larger than ${API_MAX_ANSWER_BYTES} bytes.`,
  origin_not_allowed: 'This origin is not one the extension was built to answer (WXT_API_ORIGINS).',
  no_answer: 'The extension did not answer.',
  unexpected: 'Something unexpected went wrong.',
};

/** Whether an API call can end with `code`: the codes of `API_ERROR_MESSAGES`, and no other. */
export function isApiErrorCode(code: string): code is ApiErrorCode {
  return Object.hasOwn(API_ERROR_MESSAGES, code);
}

export function apiError(code: ApiErrorCode, message?: string, retryAt?: number): ApiError {
  return {
    code,
    message: message ?? API_ERROR_MESSAGES[code],
    ...(retryAt !== undefined && { retryAt }),
  };
}
