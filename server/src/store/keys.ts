/**
 * Every key the broker writes. The keys of one API session share a hash tag `{sid}` so that they
 * live on one Redis Cluster slot, and a lock sits beside the record it guards.
 */
export const keys = {
  session: (sid: string) => `baton:{${sid}}:session`,
  connectionIds: (sid: string) => `baton:{${sid}}:connections`,
  connection: (sid: string, id: string) => `baton:{${sid}}:connection:${id}`,
  refreshLock: (sid: string, id: string) => `baton:{${sid}}:lock:${id}`,
  backoff: (sid: string, id: string) => `baton:{${sid}}:backoff:${id}`,
  handoff: (hash: string) => `baton:{handoff:${hash}}`,
  stateClaim: (hash: string) => `baton:{state:${hash}}`,
  /** Every connection in a status, scored by its record's expiry: the connections gauge. */
  connectionIndex: (status: 'connected' | 'disconnected') => `baton:{stats}:connections:${status}`,
  rateLimitPrefix: 'baton:ratelimit:',
  authSessionPrefix: 'baton:authsession:',
} as const;
