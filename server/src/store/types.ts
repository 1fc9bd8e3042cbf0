/**
 * The few storage operations the broker needs, each atomic. One implementation talks to Redis; the
 * embedded one keeps the same semantics in memory for local use. Both pass store.contract.ts.
 */
export interface Store {
  /**
   * Always from the store itself, never from a cache: for what decides access (a session) or
   * expires by time rather than by a write (a lock, a back-off).
   */
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** SET NX PX: true when this call created the key. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Read and delete in one step (GETDEL): of concurrent callers, exactly one gets the value. */
  take(key: string): Promise<string | null>;
  del(...keys: string[]): Promise<void>;
  /** Delete only while the key still holds `value` (a lock released by its owner only). */
  deleteIfEquals(key: string, value: string): Promise<boolean>;
  /**
   * A record with a version, for compare-and-set writes; from the store itself unless `cached`.
   * `cached` may answer from an in-process copy that Redis invalidates on the connection it
   * answers on (client-side caching), so it is exactly as fresh as the last answer on that
   * connection: use it only right after a `get` on the same hash tag (the session check).
   */
  getVersioned(key: string, options?: { cached?: boolean }): Promise<Versioned | null>;
  /**
   * Write `value` as version `expected + 1` if the stored version is still `expected` (0: absent).
   * False when another writer got there first.
   */
  setVersioned(key: string, expected: number, value: string, ttlMs: number): Promise<boolean>;
  setAdd(key: string, member: string, ttlMs: number): Promise<void>;
  setRemove(key: string, member: string): Promise<void>;
  setMembers(key: string): Promise<string[]>;
  /**
   * An index of members that each expire `ttlMs` after their last put (a sorted set scored by
   * expiry, on the store's own clock); the index itself lives as long as its latest member.
   */
  indexPut(key: string, member: string, ttlMs: number): Promise<void>;
  indexRemove(key: string, member: string): Promise<void>;
  /** Members not yet expired; expired ones are dropped. */
  indexCount(key: string): Promise<number>;
  /** Rejects when the store cannot be reached. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface Versioned {
  version: number;
  value: string;
}

/** Thrown (and only thrown) when the store cannot be reached or answers with an error. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}
