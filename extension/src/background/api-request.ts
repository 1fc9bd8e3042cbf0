import {
  checkProxyPath,
  isConnectionId,
  PROXY_MAX_REQUEST_BYTES,
  PROXY_METHODS,
} from '@baton/shared';
import { API_MAX_QUERY_LENGTH, apiError, type ApiError, type ApiMethod } from '../api.ts';

/** An `api.request` the broker will take, ready to send. */
export interface ApiCall {
  readonly connectionId: string;
  readonly method: ApiMethod;
  /** Below api_url, as the broker's proxy checks it (@baton/shared checkProxyPath). */
  readonly path: string;
  /** Encoded, without `?`; empty when there is none. */
  readonly query: string;
  /** JSON text, or null: no body. */
  readonly body: string | null;
}

export type CheckedApiRequest =
  { readonly ok: true; readonly call: ApiCall } | { readonly ok: false; readonly error: ApiError };

const KEYS = new Set(['connectionId', 'method', 'path', 'query', 'body']);

/**
 * Checks an `api.request`'s data as it arrives from a page (anything may arrive) with the rules
 * the broker applies, so that a request the broker would refuse never leaves; the error names the
 * field, never its value.
 */
export function checkApiRequest(data: unknown): CheckedApiRequest {
  const refuse = (why: string): CheckedApiRequest => ({
    ok: false,
    error: apiError('invalid_request', why),
  });
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    return refuse('The request must be an object.');
  const request = data as Record<string, unknown>;
  const unknown = Object.keys(request).filter((key) => !KEYS.has(key));
  if (unknown.length > 0) return refuse(`Unknown fields: ${unknown.join(', ')}.`);

  const { connectionId, method, path, query, body } = request;
  // `.` or `..` would take the call to another of the broker's routes once its URL is resolved.
  if (typeof connectionId !== 'string' || !isConnectionId(connectionId))
    return refuse('connectionId must be a connection id from api.connections.');
  if (typeof method !== 'string' || !(PROXY_METHODS as readonly string[]).includes(method))
    return refuse(`method must be one of ${PROXY_METHODS.join(', ')}.`);
  // The query has its own field; `?` or `#` in the path would change what the broker is asked.
  if (typeof path !== 'string' || /[?#]/.test(path) || checkProxyPath(path) === undefined)
    return refuse('path must stay below api_url: no leading slash, dot segments or query.');

  const queryString = encodeQuery(query);
  if (queryString === null) return refuse('query must map names to strings or arrays of strings.');
  if (queryString.length > API_MAX_QUERY_LENGTH)
    return refuse(`The query is longer than ${API_MAX_QUERY_LENGTH} characters.`);

  let json: string | null = null;
  if (body !== undefined) {
    if (method === 'GET') return refuse('A GET request takes no body.');
    json = toJson(body);
    if (json === null) return refuse('body must be a JSON value.');
    if (new TextEncoder().encode(json).length > PROXY_MAX_REQUEST_BYTES)
      return refuse(`The body is larger than ${PROXY_MAX_REQUEST_BYTES} bytes.`);
  }
  return {
    ok: true,
    call: { connectionId, method: method as ApiMethod, path, query: queryString, body: json },
  };
}

/** The query's parameters, encoded; null when they are not names to strings (or lists of them). */
function encodeQuery(query: unknown): string | null {
  if (query === undefined) return '';
  if (typeof query !== 'object' || query === null || Array.isArray(query)) return null;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    if (!values.every((v) => typeof v === 'string')) return null;
    for (const v of values as string[]) params.append(name, v);
  }
  return params.toString();
}

function toJson(body: unknown): string | null {
  try {
    return JSON.stringify(body) ?? null;
  } catch {
    return null;
  }
}
