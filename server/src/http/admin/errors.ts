import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { AdminInputError } from '../../admin/use-cases.ts';
import { isStoreDown } from '../../store/errors.ts';

/**
 * The admin API's errors: codes of its own (an operator's console is not the extension, whose
 * codes are @baton/shared's), one status each, answered as `{ error, message }`.
 */
export const ADMIN_ERROR_STATUS = {
  invalid_request: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  too_many_attempts: 429,
  server_error: 500,
  upstream_unavailable: 503,
} as const satisfies Record<string, number>;

export type AdminErrorCode = keyof typeof ADMIN_ERROR_STATUS;
export const ADMIN_ERROR_CODES = Object.keys(ADMIN_ERROR_STATUS) as [
  AdminErrorCode,
  ...AdminErrorCode[],
];

/** The realm of the 401's challenge (RFC 6750). */
export const ADMIN_REALM = 'baton-admin';

export class AdminError extends Error {
  readonly code: AdminErrorCode;
  readonly status: number;
  /** Seconds, for 429 and 503. */
  readonly retryAfter: number | undefined;

  constructor(code: AdminErrorCode, message: string, retryAfter?: number) {
    super(message);
    this.name = 'AdminError';
    this.code = code;
    this.status = ADMIN_ERROR_STATUS[code];
    this.retryAfter = retryAfter;
  }
}

export const invalid = (message: string): AdminError => new AdminError('invalid_request', message);
export const noSuchRoute = (): AdminError => new AdminError('not_found', 'No such route.');

/** Lower-layer errors, translated once: the store down, a body Express could not read. */
function toAdminError(error: unknown): AdminError {
  if (error instanceof AdminError) return error;
  // The use cases check their input too (the CLI's); their messages name no value.
  if (error instanceof AdminInputError)
    return invalid(`${error.message[0]?.toUpperCase() ?? ''}${error.message.slice(1)}.`);
  if (isStoreDown(error))
    return new AdminError('upstream_unavailable', 'The broker cannot reach its store.', 5);
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return invalid(
      status === 413
        ? 'The request body is too large.'
        : 'The request body could not be read: send JSON.',
    );
  return new AdminError('server_error', 'The broker could not complete the request.');
}

/** The one error answer of the admin app. Unexpected errors are logged, never shown. */
export function adminErrorAnswer(log: Logger) {
  return (res: ServerResponse, error: unknown): void => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const answer = toAdminError(error);
    if (answer.status >= 500) log.error({ err: error }, 'admin request failed');
    if (answer.retryAfter !== undefined) res.setHeader('Retry-After', String(answer.retryAfter));
    if (answer.code === 'unauthenticated')
      res.setHeader('WWW-Authenticate', `Bearer realm="${ADMIN_REALM}"`);
    res.statusCode = answer.status;
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ error: answer.code, message: answer.message }));
  };
}
