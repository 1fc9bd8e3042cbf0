/**
 * The few storage operations the broker needs, each atomic. One implementation talks to Redis; the
 * embedded one keeps the same semantics in memory for local use. Both pass store.contract.ts.
 * Format1Reads, below, are the upgrade's only.
 */
export interface Store extends Format1Reads {
  /**
   * From the store itself unless `cached` (see getVersioned): never cache what expires by time
   * rather than by a write (a lock, a back-off) unless its value says when it expires.
   * `alongside`: a versioned key on the same slot that the caller reads next (a call's record after
   * its session): when neither is kept, both are read in one round trip, and kept once the session
   * is known to exist; before (its first read, untracked), the record is lent to the caller's own
   * read of it, once and within 100 ms: that call's read, not a copy kept for others.
   */
  get(key: string, options?: { cached?: boolean; alongside?: string }): Promise<string | null>;
  /**
   * A value and the time it has left (ms), on the store's own clock, never from a cache; null when
   * absent. For what must end alike on every instance whatever their clocks (a back-off).
   */
  getWithTtl(key: string): Promise<{ value: string; ttlMs: number } | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** SET NX PX: true when this call created the key. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Read and delete in one step (GETDEL): of concurrent callers, exactly one gets the value. */
  take(key: string): Promise<string | null>;
  del(...keys: string[]): Promise<void>;
  /** A key's time to live set anew (PEXPIRE); nothing when it is absent. */
  expire(key: string, ttlMs: number): Promise<void>;
  /** Delete only while the key still holds `value` (a lock released by its owner only). */
  deleteIfEquals(key: string, value: string): Promise<boolean>;
  /** A new time to live only while the key still holds `value` (a lease renewed by its owner). */
  expireIfEquals(key: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * A record with a version, for compare-and-set writes; from the store itself unless `cached`.
   * `cached` may answer from an in-process copy that Redis invalidates (client-side caching): a
   * write by any instance invalidates it before the writer is answered, so once a write is
   * acknowledged no instance answers the old value; and a copy is used only while Redis has
   * answered this process within the last second (a heartbeat), so a Redis that froze or was cut
   * off is asked, and answers 503, instead of the copy being used on.
   */
  getVersioned(key: string, options?: { cached?: boolean }): Promise<Versioned | null>;
  /**
   * Write `value` as version `expected + 1` if the stored version is still `expected` (0: absent).
   * False when another writer got there first.
   */
  setVersioned(
    key: string,
    expected: number,
    value: string,
    ttlMs: number,
    outbox?: OutboxWrite,
  ): Promise<boolean>;
  /**
   * Delete `keys` and, only when the first of them existed, append `outbox`'s entry, in one step
   * (all on the outbox's slot): of concurrent deletions, exactly one records its event. True when
   * it did.
   */
  delRecording(keys: readonly string[], outbox: OutboxWrite): Promise<boolean>;
  /** Append to a list; the list then lives at least `ttlMs` (it is never shortened). */
  listPush(key: string, value: string, ttlMs: number): Promise<void>;
  listHead(key: string): Promise<string | null>;
  /** Remove the list's first element if it is still `value`: one of concurrent callers wins. */
  listPopIfHead(key: string, value: string): Promise<boolean>;
  listLength(key: string): Promise<number>;
  /**
   * A schedule: members each due at a time, in milliseconds on the caller's clock (so a test's
   * clock drives it). `onlyIfAbsent` keeps a member's time if it already has one; `onlyIfLater`
   * keeps it if it is later than `atMs`; the schedule then lives at least `keepMs` (default: no
   * time to live is set).
   */
  schedulePut(
    key: string,
    member: string,
    atMs: number,
    options?: { onlyIfAbsent?: boolean; onlyIfLater?: boolean; keepMs?: number },
  ): Promise<void>;
  /** Up to `limit` members due at `atMs` (Infinity: any time) or before, earliest first. */
  scheduleDue(key: string, atMs: number, limit: number): Promise<string[]>;
  /** Removes `member`; with `dueBy`, only if it is due at `dueBy` or before (a later time stays). */
  scheduleRemove(key: string, member: string, options?: { dueBy?: number }): Promise<void>;
  scheduleSize(key: string): Promise<number>;
  /** Add `delta` to a counter (absent: 0) that then lives `ttlMs`; answers the new value. */
  counterAdd(key: string, delta: number, ttlMs: number): Promise<number>;
  /**
   * A log bounded by age and count: `member` (unique) added at `atMs`, then members older than
   * `bounds.minAtMs` and the oldest beyond `bounds.maxCount` dropped; the log lives at least
   * `bounds.ttlMs`. Answers how many were dropped.
   */
  logAdd(
    key: string,
    member: string,
    atMs: number,
    bounds: { maxCount: number; minAtMs: number; ttlMs: number },
  ): Promise<number>;
  /** Up to `limit` members of a log, newest first. */
  logNewest(key: string, limit: number): Promise<string[]>;
  logSize(key: string): Promise<number>;
  setAdd(key: string, member: string, ttlMs: number): Promise<void>;
  setRemove(key: string, member: string): Promise<void>;
  setMembers(key: string): Promise<string[]>;
  /**
   * An index of members that each expire `ttlMs` after their last put (a sorted set scored by
   * expiry, on the store's own clock); the index itself lives as long as its latest member. A put
   * drops the members already expired: an index nobody counts (the licence index) stays bounded.
   */
  indexPut(key: string, member: string, ttlMs: number): Promise<void>;
  indexRemove(key: string, member: string): Promise<void>;
  /** Members not yet expired; expired ones are dropped. */
  indexCount(key: string): Promise<number>;
  /**
   * The members not yet expired that start with `prefix` (default: all), in no particular order;
   * expired ones are dropped. Filtered by the store: only the matches travel.
   */
  indexMembers(key: string, prefix?: string): Promise<string[]>;
  /**
   * Every key whose name matches `pattern` (a Redis glob: `*`, `?`), on every master (SCAN walks
   * one node's keyspace). A key written or deleted during the walk may be seen or not; one that
   * lives throughout is seen at least once (SCAN's guarantee: a caller must bear repeats).
   */
  scan(pattern: string): AsyncIterable<string>;
  /** Rejects when the store cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The reads only the upgrade from data format 1 needs (store/format1/moves.ts), to copy an old key
 * batch by batch: deleted with format 1, and `extends Format1Reads` with them. The Redis store's
 * are in store/format1/redis.ts.
 */
export interface Format1Reads {
  /**
   * Up to `count` members of a schedule or index with the lowest scores, with their scores, left
   * in place (ZRANGE WITHSCORES): for copying one batch by batch, each removed once copied
   * (scheduleRemove, indexRemove).
   */
  sortedRange(key: string, count: number): Promise<{ member: string; score: number }[]>;
  /** Elements `start` to `stop` (inclusive; negative counts from the end), as LRANGE. */
  listRange(key: string, start: number, stop: number): Promise<string[]>;
}

/**
 * An event recorded in the same step as the write it reports: `entry` appended to the list `key`
 * (a session's outbox, on the session's slot), which then lives at least `ttlMs`.
 */
export interface OutboxWrite {
  readonly key: string;
  readonly entry: string;
  readonly ttlMs: number;
}

/** Frozen: a store hands the same object out while it keeps the answer (records.ts relies on it). */
export interface Versioned {
  readonly version: number;
  readonly value: string;
}

/** Thrown (and only thrown) when the store cannot be reached or answers with an error. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
