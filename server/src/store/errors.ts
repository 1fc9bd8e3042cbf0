import { StoreUnavailableError } from './types.ts';

/** node-redis's errors for a store that cannot be reached, by name. */
const REDIS_DOWN = new Set([
  'ClientClosedError',
  'ClientOfflineError',
  'ConnectionTimeoutError',
  'SocketClosedUnexpectedlyError',
  'ReconnectStrategyError',
  'SocketTimeoutError',
]);

/** Whether an error means the store is down (answer 503), not that the request was wrong. */
export function isStoreDown(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  if (REDIS_DOWN.has(error.name) || REDIS_DOWN.has(error.constructor.name)) return true;
  return /ECONNREFUSED|client is closed|offline/i.test(error.message);
}
