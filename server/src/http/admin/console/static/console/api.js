// @ts-check
/* global fetch */
/**
 * The admin API (/api/v1) as the console calls it: the token in the Authorization header only,
 * never in a URL; no cookie, no cache, no referrer. An answer other than 2xx becomes an ApiError
 * with the API's code and message and, for 429 and 503, its Retry-After.
 */

const BASE = '/api/v1';

export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status; 0 when the broker could not be reached
   * @param {string} code the API's error code (`unauthenticated`, `forbidden`…)
   * @param {string} message the API's message
   * @param {number | null} retryAfter seconds, when the answer said
   */
  constructor(status, code, message, retryAfter) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** @typedef {(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => Promise<any>} Api */

/**
 * The API with the token `token()` gives at each call (null: signed out).
 * @param {() => string | null} token
 * @returns {Api}
 */
export function createApi(token) {
  return async (method, path, body) => {
    const bearer = token();
    if (bearer === null) throw new ApiError(401, 'unauthenticated', 'You are signed out.', null);
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${bearer}`, accept: 'application/json' };
    /** @type {RequestInit} */
    const init = { method, headers, cache: 'no-store', credentials: 'omit' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(`${BASE}${path}`, init);
    } catch {
      throw new ApiError(0, 'unreachable', 'The broker could not be reached.', null);
    }
    const data = await response.json().catch(() => null);
    if (response.ok) return data;
    const retry = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
    throw new ApiError(
      response.status,
      typeof data?.error === 'string' ? data.error : 'error',
      typeof data?.message === 'string' ? data.message : response.statusText,
      Number.isFinite(retry) ? retry : null,
    );
  };
}

/** A path segment (an id, a session reference), encoded. */
export const segment = (/** @type {string} */ value) => encodeURIComponent(value);
