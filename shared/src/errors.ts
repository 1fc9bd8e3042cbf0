import { z } from 'zod';

/**
 * Every error the broker answers with, as `{ error, message }`. The status of each code is fixed
 * here so that the broker, the extension and the tests agree on it.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_session: 401,
  invalid_grant: 400,
  not_found: 404,
  reauthorization_required: 401,
  upstream_unavailable: 503,
  /** The license API's answer is larger than the broker passes on (PROXY_MAX_ANSWER_BYTES). */
  upstream_too_large: 502,
  rate_limited: 429,
  server_error: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/**
 * The response header that marks an answer as the broker's own error; its value is the error code.
 * The proxy copies only a fixed list of headers from upstream, never this one, so a license API
 * cannot pass its answer off as the broker's: a 401 without it is the license API's, about that
 * call, not about the session.
 */
export const BROKER_ERROR_HEADER = 'Baton-Error';

export const errorBodySchema = z.object({
  error: z.enum(ERROR_CODES),
  message: z.string(),
});
export type ErrorBody = z.infer<typeof errorBodySchema>;

/**
 * Errors the broker sends back to the extension's redirect URL as `?error=` at the end of the
 * authorization flow. `access_denied` is the provider's own; the others are the broker's.
 */
export const AUTH_REDIRECT_ERRORS = [
  'access_denied',
  'invalid_state',
  'invalid_api_url',
  'exchange_failed',
  'server_error',
] as const;
export type AuthRedirectError = (typeof AUTH_REDIRECT_ERRORS)[number];

export function isAuthRedirectError(value: string): value is AuthRedirectError {
  return (AUTH_REDIRECT_ERRORS as readonly string[]).includes(value);
}
