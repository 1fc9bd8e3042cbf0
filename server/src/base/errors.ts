import { ERROR_STATUS, type ErrorBody, type ErrorCode } from '@baton/shared';

/**
 * The one error type the broker throws on purpose. Its code and status come from @baton/shared;
 * `expose` says whether the message may reach the client (otherwise the error middleware answers a
 * generic server_error). Lower-layer errors are translated into it once, where they enter.
 */
export class BrokerError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly expose: boolean;
  /** Seconds, for 429 and 503 answers. */
  readonly retryAfter: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { expose?: boolean; retryAfter?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.name = 'BrokerError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.expose = options.expose ?? code !== 'server_error';
    this.retryAfter = options.retryAfter;
  }

  toBody(): ErrorBody {
    return this.expose
      ? { error: this.code, message: this.message }
      : { error: 'server_error', message: 'The broker could not complete the request.' };
  }
}

export const invalidRequest = (message: string): BrokerError =>
  new BrokerError('invalid_request', message);
export const invalidSession = (): BrokerError =>
  new BrokerError('invalid_session', 'The session token is missing, unknown or expired.');
export const notFound = (what: string): BrokerError =>
  new BrokerError('not_found', `${what} not found.`);
