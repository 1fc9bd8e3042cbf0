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
  /** The session's events not yet delivered, in order (ops/events.ts), and who delivers them. */
  outbox: (sid: string) => `baton:{${sid}}:outbox`,
  outboxLease: (sid: string) => `baton:{${sid}}:outbox:lease`,
  outboxAttempts: (sid: string) => `baton:{${sid}}:outbox:attempts`,
  /** Sessions whose outbox is due for delivery, scored by when. */
  eventsDue: 'baton:{events}:due',
  /** Events given up on (ops/event-delivery.ts), for the admin CLI. */
  deadLetters: 'baton:{events}:dead',
  handoff: (hash: string) => `baton:{handoff:${hash}}`,
  stateClaim: (hash: string) => `baton:{state:${hash}}`,
  /** Every connection in a status, scored by its record's expiry: the connections gauge. */
  connectionIndex: (status: 'connected' | 'disconnected') => `baton:{stats}:connections:${status}`,
  /** The instance that reports store-wide gauges (http/app.ts). */
  metricsReporter: 'baton:{stats}:metrics-reporter',
  rateLimitPrefix: 'baton:ratelimit:',
  authSessionPrefix: 'baton:authsession:',
} as const;
