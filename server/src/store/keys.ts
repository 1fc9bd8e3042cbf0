import { createHash } from 'node:crypto';

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
  /** How many of the session's events went to the dead letters lately (its share of them). */
  outboxDeadLetters: (sid: string) => `baton:{${sid}}:outbox:dead`,
  /**
   * Sessions whose outbox is due for delivery, scored by when; the events waiting in them, counted;
   * and the events given up on (ops/event-delivery.ts): each of these is spread over
   * EVENT_SHARDS keys (eventShard), so no key holds every session's share and a Cluster spreads
   * them over its masters.
   */
  eventsDue: (shard: number) => `baton:{events:${shard}}:due`,
  eventsBacklog: (shard: number) => `baton:{events:${shard}}:backlog`,
  deadLetters: (shard: number) => `baton:{events:${shard}}:dead`,
  handoff: (hash: string) => `baton:{handoff:${hash}}`,
  stateClaim: (hash: string) => `baton:{state:${hash}}`,
  /**
   * The connections in a status, scored by their record's expiry (the connections gauge), spread
   * over INDEX_SHARDS keys by session: members are `indexMember`s.
   */
  connectionIndex: (status: 'connected' | 'disconnected', shard: number) =>
    `baton:{stats:${shard}}:connections:${status}`,
  /**
   * The sessions that hold each licence (a connection's api_url), scored by their record's
   * expiry, spread over LICENCE_SHARDS keys by session (indexShard): members are
   * `licenceMember`s. Data format 3 (store/format.ts).
   */
  licenceIndex: (shard: number) => `baton:{licences:${shard}}`,
  /**
   * The data format the store holds (store/format.ts), and who upgrades it. Format 1's keys, moved
   * into the shards at start-up, are store/format1/keys.ts's.
   */
  dataFormat: 'baton:format',
  dataFormatUpgrade: 'baton:format:upgrade',
  /** The instance that reports store-wide gauges (http/app.ts). */
  metricsReporter: 'baton:{stats}:metrics-reporter',
  /**
   * How many refreshes ended as `outcome` in one minute (minutes since the epoch), across every
   * instance (connections/refresh/outcomes.ts): no hash tag, so each minute's keys land on slots
   * of their own rather than one slot taking every refresh.
   */
  refreshOutcomes: (outcome: string, minute: number) => `baton:refreshes:${outcome}:${minute}`,
  /**
   * The admin outbox (ops/events.ts ADMIN_OUTBOX, a reserved outbox id): `outbox('admin')`, written
   * through `outbox` like a session's, with its lease, attempts and dead-letter count beside it.
   */
  adminOutbox: 'baton:{admin}:outbox',
  /** An operator's job (admin/key-walk-job.ts): its state, and the instance running it. */
  adminJob: (name: string) => `baton:{admin}:job:${name}`,
  adminJobLease: (name: string) => `baton:{admin}:job:${name}:lease`,
  /** The last census that finished (admin/census-job.ts): what the overview counts from. */
  adminCensus: 'baton:{admin}:census',
  rateLimitPrefix: 'baton:ratelimit:',
  authSessionPrefix: 'baton:authsession:',
} as const;

/** What a session's key is, read back from its name (for the admin CLI's scans). */
export type SessionKey =
  | { kind: 'session'; sid: string }
  | { kind: 'connection'; sid: string; id: string }
  | { kind: 'outbox'; sid: string };

const SESSION_KEY = /^baton:\{([A-Za-z0-9_-]+)\}:(session|outbox|connection:(.+))$/;

/** The session key `key` names (its kind, session id, connection id), or null for any other. */
export function parseSessionKey(key: string): SessionKey | null {
  const match = SESSION_KEY.exec(key);
  const [, sid, kind, id] = match ?? [];
  if (sid === undefined || kind === undefined) return null;
  if (id !== undefined) return { kind: 'connection', sid, id };
  return kind === 'session' ? { kind: 'session', sid } : { kind: 'outbox', sid };
}

/** SCAN patterns for the session keys of each kind (on each master: a Cluster spreads them). */
export const sessionKeyPatterns = {
  session: 'baton:{*}:session',
  connection: 'baton:{*}:connection:*',
  outbox: 'baton:{*}:outbox',
} as const;

/**
 * How many keys the connections index is spread over: at 100,000 connections about 100 a key, under
 * Redis's 128 for its compact encoding of a sorted set (zset-max-listpack-entries).
 */
export const INDEX_SHARDS = 1024;

/** The connections index's shard of session `sid` (its first two characters are uniform). */
export function indexShard(sid: string): number {
  return (BASE64URL.indexOf(sid.charAt(0)) * 64 + BASE64URL.indexOf(sid.charAt(1))) % INDEX_SHARDS;
}

/**
 * A connection in the index: 96 bits of its session id (never a collision among any plausible
 * number of sessions) and its id, 39 characters in all.
 */
export const indexMember = (sid: string, id: string): string => `${sid.slice(0, 16)}:${id}`;

/**
 * How many keys the licence index is spread over, by session as the connections index and for the
 * same reason: at 100,000 sessions about 100 a key, under Redis's 128 for a sorted set's compact
 * encoding. Not by licence: every holder of a licence would then share one key, and a licence
 * held by many (a company's, by its staff) would make one large key on one Cluster slot: S6's
 * sessions, over three licences, made keys of 1.6 MB at 10,000 sessions (hashtable-encoded, 1,318
 * bytes a session). A lookup by licence reads every shard instead (an operator's, rare), each
 * answering only its members of that licence.
 */
export const LICENCE_SHARDS = INDEX_SHARDS;

/**
 * A licence's name in the index: 66 bits of the SHA-256 of its api_url (base64url, uniform).
 * Licences whose names collide share their members: a lookup opens each record and keeps those
 * whose api_url is the one asked for.
 */
export const licenceHash = (apiUrl: string): string =>
  createHash('sha256').update(apiUrl).digest('base64url').slice(0, 11);

/** What every member of licence `apiUrl` starts with. */
export const licencePrefix = (apiUrl: string): string => `${licenceHash(apiUrl)}:`;

/**
 * A session that holds the licence `apiUrl`, in the index (its shard: indexShard(sid)): the
 * licence's hash and the FULL session id (the record's key needs it), 55 characters. Not the connection id: a session holds a
 * licence once (connections/lifecycle.ts replaces it in place), and 11 + 43 + 22 characters would
 * pass Redis's 64 bytes for a member of a compact sorted set (zset-max-listpack-value), which
 * would cost some 100 bytes more a member. A lookup lists the session's connections.
 */
export const licenceMember = (apiUrl: string, sid: string): string =>
  `${licencePrefix(apiUrl)}${sid}`;

/** How many keys the event schedule, its count and the dead letters are each spread over. */
export const EVENT_SHARDS = 16;

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The event shard of session `sid` (a base64url SHA-256, so its first character is uniform): the
 * same for every event of a session, so they keep their order.
 */
export function eventShard(sid: string): number {
  return Math.max(0, BASE64URL.indexOf(sid.charAt(0))) % EVENT_SHARDS;
}
