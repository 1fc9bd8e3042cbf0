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

/**
 * Redis's own error replies while it cannot serve a key for now: a Cluster without a master for
 * its slot (failing over), a node still loading its data, a replica that was just a master. What
 * the broker sends goes through its guard (commands.ts); these reach here from the libraries that
 * hold the client themselves (the sign-in's session store, the rate limiters).
 */
const REDIS_BUSY = /^(?:CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY)\b/;

/**
 * The socket's own errors, which node-redis hands on as they are to a command in flight when its
 * connection drops (a Cluster node killed under the sign-in's session store, say).
 */
const SOCKET_DOWN = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Whether an error means the store is down (answer 503), not that the request was wrong. */
export function isStoreDown(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  if (REDIS_DOWN.has(error.name) || REDIS_DOWN.has(error.constructor.name)) return true;
  if (SOCKET_DOWN.has(String((error as NodeJS.ErrnoException).code))) return true;
  return (
    REDIS_BUSY.test(error.message) || /ECONNREFUSED|client is closed|offline/i.test(error.message)
  );
}
