import { BROKER_ERROR_HEADER, type ReadyStatus } from '@baton/shared';
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { MissingKeyError } from '../base/crypto.ts';
import { BrokerError } from '../base/errors.ts';
import { isStoreDown } from '../store/errors.ts';
import type { Store } from '../store/types.ts';
import { requestId } from './access-log.ts';

/**
 * Readiness: false while shutting down, or once a stored record needed an encryption key this
 * broker lacks (until it is restarted with the key); otherwise whether the store answers.
 */
export function createReadiness(store: Store, log: Logger) {
  let shuttingDown = false;
  let missingKey = false;
  return {
    get accepting(): boolean {
      return !shuttingDown;
    },
    setReady(ready: boolean): void {
      shuttingDown = !ready;
    },
    /** Told of every error answered: a missing key makes the broker not ready. */
    sawError(error: unknown): void {
      if (!(error instanceof MissingKeyError) || missingKey) return;
      missingKey = true;
      log.error(
        { err: error },
        'a stored record needs an encryption key this broker lacks; not ready until TOKEN_ENCRYPTION_KEYS has it again',
      );
    },
    async status(): Promise<ReadyStatus> {
      if (shuttingDown) return 'shutting_down';
      if (missingKey) return 'encryption_key_missing';
      try {
        await store.ping();
        return 'ready';
      } catch {
        return 'store_unavailable';
      }
    },
  };
}
export type Readiness = ReturnType<typeof createReadiness>;

/**
 * The broker's one error answer, for the Express routes and the API route alike: JSON
 * `{ error, message }`, `Baton-Error: <code>` (the mark an upstream cannot forge), Retry-After
 * where it applies, and a generic server_error for anything not meant to be shown.
 */
export function errorAnswer(log: Logger, readiness: Readiness) {
  return (res: ServerResponse, error: unknown): void => {
    if (res.headersSent) {
      // Too late for an error body: cut the answer short rather than pass it off as whole.
      res.destroy();
      return;
    }
    readiness.sawError(error);
    const brokerError = toBrokerError(error);
    if (brokerError.code === 'server_error' || brokerError.status >= 500)
      log.error({ err: error, reqId: requestId(res) }, 'request failed');
    if (brokerError.retryAfter !== undefined)
      res.setHeader('Retry-After', String(brokerError.retryAfter));
    const body = brokerError.toBody();
    res.setHeader('Cache-Control', 'no-store');
    res.statusCode = brokerError.status;
    res.setHeader(BROKER_ERROR_HEADER, body.error);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };
}
export type ErrorAnswer = ReturnType<typeof errorAnswer>;

/** Lower-layer errors, translated once at the edge. */
function toBrokerError(error: unknown): BrokerError {
  if (error instanceof BrokerError) return error;
  if (isStoreDown(error))
    return new BrokerError('upstream_unavailable', 'The broker cannot reach its store.', {
      retryAfter: 5,
    });
  const status = (error as { status?: unknown; type?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new BrokerError('invalid_request', 'The request could not be read.');
  }
  return new BrokerError('server_error', 'unexpected error', { expose: false, cause: error });
}
