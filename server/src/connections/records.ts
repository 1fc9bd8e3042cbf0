import type { Connection, DisconnectedReason } from '@baton/shared';
import type { Sealer } from '../base/crypto.ts';
import { DEFAULT_SESSION_LIFETIME } from '../base/defaults.ts';
import { invalidSession } from '../base/errors.ts';
import { noEvents, type BrokerEvent, type EventSink } from './events.ts';
import { refreshBackoffKey } from './refresh/refresh-backoff.ts';
import { refreshLockKey } from './refresh/lock.ts';
import { INDEX_SHARDS, indexMember, indexShard, keys } from '../store/keys.ts';
import { createLicenceIndex } from './licences.ts';
import type { TokenSet } from '../oauth/provider.ts';
import type { Store, Versioned } from '../store/types.ts';

const STATUSES = ['connected', 'disconnected'] as const;
/** Shards of the connections index counted at once. */
const COUNT_BATCH = 64;

/** One connected license, as stored (sealed) per session. */
export interface ConnectionRecord {
  id: string;
  apiUrl: string;
  status: 'connected' | 'disconnected';
  connectedAt: number;
  /** Present while connected. */
  tokens?: TokenSet;
  /** When a refresh last stored a pair (the admin's "last refresh"); absent: none yet. */
  refreshedAt?: number;
  disconnectedReason?: DisconnectedReason;
  /** The last refresh got no usable answer: the provider may have rotated without telling us. */
  refreshLost?: boolean;
  /**
   * When a refresh last failed to cure an upstream 401 (the retry with the new token was refused
   * too): the refresh budget (refresh/policy.ts, mayRefreshOnRejection).
   */
  uncuredAt?: number;
}

export interface LoadedConnection {
  record: ConnectionRecord;
  version: number;
}

/**
 * The keys of a session's connections, which this module alone reads and writes: each record, the
 * session's set of ids, and the indexes (by status, by licence). Sessions read a record's key
 * beside their own (`recordKey`) and renew every key of their connections through the
 * repository's `renew` (or `renewRecords`, where no record can be opened).
 */
export const recordKey = (sid: string, id: string): string => keys.connection(sid, id);

/**
 * Every connection key of session `sid` made to live `ttlMs` from now: its session was renewed.
 * Answers the connections' ids. Not their licence index entries, which need the records opened
 * (the repository's `renew` does both).
 */
export async function renewRecords(store: Store, sid: string, ttlMs: number): Promise<string[]> {
  const ids = await store.setMembers(keys.connectionIds(sid));
  await Promise.all([
    store.expire(keys.connectionIds(sid), ttlMs),
    ...ids.map((id) => store.expire(recordKey(sid, id), ttlMs)),
  ]);
  return ids;
}

/**
 * Connection records, sealed with the connection's own key as additional data. A record is
 * opened (AES-GCM, JSON) once per stored answer: the store hands out the same frozen `Versioned`
 * for as long as it keeps an answer (Redis: the tracked answers; the memory store: its entry), and
 * the record opened from it is kept beside it, in a WeakMap, for exactly that long. An answer read
 * afresh (untracked, or uncached) is opened afresh, and its record is garbage with it: nothing
 * here is evicted, capped or ever decides what is current.
 *
 * The identity rule: for the same stored answer, `load` hands out the very same frozen record
 * object; a changed blob gives a new one. Everything worked out once per record read is kept in a
 * WeakMap keyed by that object and relies on this rule: the loader's allowlist re-check
 * (connections/loader.ts), the parsed api_url (connections/proxy.ts). records.test.ts fails if
 * the rule is ever broken.
 *
 * A record lives exactly as long as its session has left (`sessions.remainingMs`), and is not
 * written at all once the session is gone: no record outlives its session.
 */
export function createConnectionRepository(
  store: Store,
  sealer: Sealer,
  options: {
    /** What a record written under session `sid` may live (sessions.ts); null: it is gone. */
    sessions?: { remainingMs(sid: string, options?: { fresh?: boolean }): Promise<number | null> };
    /** Where the events a write reports are recorded, in the same step (./events.ts). */
    events?: EventSink;
  } = {},
) {
  const { events = noEvents } = options;
  // Without sessions (unit tests, tools that seal records of their own), a fixed lifetime.
  const sessions = options.sessions ?? { remainingMs: async () => DEFAULT_SESSION_LIFETIME.idleMs };
  const aad = (sid: string, id: string) => `connection:${sid}:${id}`;
  const opened = new WeakMap<Versioned, ConnectionRecord>();
  const licences = createLicenceIndex(store);

  function open(sid: string, id: string, stored: Versioned): ConnectionRecord {
    const kept = opened.get(stored);
    if (kept) return kept;
    // The id is the key's (and bound to the blob by `aad`), not repeated inside it.
    const fields = JSON.parse(sealer.open(stored.value, aad(sid, id))) as Omit<
      ConnectionRecord,
      'id'
    >;
    const record: ConnectionRecord = { ...fields, id };
    if (record.tokens) Object.freeze(record.tokens);
    Object.freeze(record);
    opened.set(stored, record);
    return record;
  }
  const OTHER = { connected: 'disconnected', disconnected: 'connected' } as const;
  const keysOfOne = (sid: string, id: string): string[] => [
    recordKey(sid, id),
    refreshLockKey(sid, id),
    refreshBackoffKey(sid, id),
  ];

  /** The record stored, or null when it cannot be opened (a retired key id, a corrupt blob). */
  function openable(sid: string, id: string, stored: Versioned): ConnectionRecord | null {
    try {
      return open(sid, id, stored);
    } catch {
      return null;
    }
  }

  /**
   * The api_url of each of connections `ids` that is stored and can be opened: what finds their
   * licence index entries, read before the records go. One that cannot be opened is not there:
   * its entry expires with it. From the broker's cache when it has the record: a record's api_url
   * never changes (another licence is another record).
   */
  async function apiUrls(sid: string, ids: readonly string[]): Promise<string[]> {
    const records = await Promise.all(
      ids.map(async (id) => {
        const stored = await store.getVersioned(recordKey(sid, id), { cached: true });
        return stored && openable(sid, id, stored);
      }),
    );
    return records.flatMap((record) => (record ? [record.apiUrl] : []));
  }

  /**
   * Connections `ids` out of the status index (the connections gauge), whatever their status, and
   * the session's holds of `apiUrls` (read with `apiUrls` before the records went) out of the
   * licence index.
   */
  async function unindex(
    sid: string,
    ids: readonly string[],
    apiUrls: readonly string[] = [],
  ): Promise<void> {
    for (const id of ids)
      for (const status of STATUSES)
        await store.indexRemove(
          keys.connectionIndex(status, indexShard(sid)),
          indexMember(sid, id),
        );
    for (const apiUrl of apiUrls) await licences.remove(sid, apiUrl);
  }

  /**
   * Compare-and-set over `version` (0: a new record). False when someone wrote first. `event`, if
   * given, is recorded with the write, in the same step: only when the write lands.
   */
  async function save(
    sid: string,
    record: ConnectionRecord,
    version: number,
    event?: BrokerEvent,
  ): Promise<boolean> {
    const ttlMs = await sessions.remainingMs(sid);
    if (ttlMs === null) throw invalidSession();
    const { id: _id, ...stored } = record;
    const sealed = sealer.seal(JSON.stringify(stored), aad(sid, record.id));
    const outbox = event ? await events.record(sid, event) : null;
    // Its id in the session's set first: a store failing between the two steps leaves an id
    // without a record (listed as nothing, deleted with the session), never a record that no
    // sign-out finds.
    await store.setAdd(keys.connectionIds(sid), record.id, ttlMs);
    const written = await store.setVersioned(
      recordKey(sid, record.id),
      version,
      sealed,
      ttlMs,
      outbox ?? undefined,
    );
    if (written && outbox) await events.recorded(sid);
    // Not written, and the session ended meanwhile (a sign-out deleted its keys between the check
    // above and the set's write): the id put back would outlive it, in a set no one ends.
    if (!written && (await sessions.remainingMs(sid, { fresh: true })) === null)
      await store.setRemove(keys.connectionIds(sid), record.id);
    if (written) {
      const [at, shard] = [indexMember(sid, record.id), indexShard(sid)];
      // The licence index beside the status index (another key): no round trip of its own.
      await Promise.all([
        licences.put(sid, record.apiUrl, ttlMs),
        (async () => {
          await store.indexPut(keys.connectionIndex(record.status, shard), at, ttlMs);
          await store.indexRemove(keys.connectionIndex(OTHER[record.status], shard), at);
        })(),
      ]);
      // A new record, and the session ended meanwhile: its sign-out deleted the keys it knew of
      // before this write made them. They go now, not when their TTL ends.
      if (version === 0 && (await sessions.remainingMs(sid, { fresh: true })) === null) {
        await remove(sid, record.id);
        throw invalidSession();
      }
    }
    return written;
  }

  /**
   * Removes the connection, and in the same step its refresh lock and back-off (named by their
   * owners, refresh/); `event`, if given, is recorded in that step too, and only when the record
   * was there: of concurrent removals, one reports it.
   */
  async function remove(sid: string, id: string, event?: BrokerEvent): Promise<void> {
    const gone = keysOfOne(sid, id);
    // Its licence is known only from its record: read before the record goes.
    const held = await apiUrls(sid, [id]);
    const outbox = event ? await events.record(sid, event) : null;
    if (!outbox) await store.del(...gone);
    else if (await store.delRecording(gone, outbox)) await events.recorded(sid);
    await store.setRemove(keys.connectionIds(sid), id);
    await unindex(sid, [id], held);
  }

  return {
    /**
     * A record sealed under a key other than the active one is sealed again under it on read.
     * `cached`: see Store.getVersioned (only right after the session check).
     */
    async load(
      sid: string,
      id: string,
      options: { cached?: boolean } = {},
    ): Promise<LoadedConnection | null> {
      const stored = await store.getVersioned(recordKey(sid, id), options);
      if (!stored) return null;
      const record = open(sid, id, stored);
      if (sealer.isStale(stored.value) && (await save(sid, record, stored.version)))
        return { record, version: stored.version + 1 };
      return { record, version: stored.version };
    },

    save,

    /** A record as stored, opened (throws when it cannot be): the data format upgrade's. */
    open,

    /** The record as stored, sealed and unopened (the admin's count of records by key id). */
    sealed(sid: string, id: string): Promise<Versioned | null> {
      return store.getVersioned(recordKey(sid, id));
    },

    ids(sid: string): Promise<string[]> {
      return store.setMembers(keys.connectionIds(sid));
    },

    /**
     * The keys of connections `ids` (each record, refresh lock and back-off), then the session's
     * set of ids: what ending the session deletes with it (end-session.ts).
     */
    keysOf(sid: string, ids: readonly string[]): string[] {
      return [...ids.flatMap((id) => keysOfOne(sid, id)), keys.connectionIds(sid)];
    },

    apiUrls,
    unindex,

    /**
     * Session `sid` renewed (sessions.ts): every key of its connections made to live `ttlMs` from
     * now (renewRecords), and each licence it holds kept in the licence index as long, put again
     * (a connection an older release wrote, without an entry, gets one here). A renewal that meets
     * a removal may put back an entry of a connection just removed: a lookup finds no record
     * there, and the entry expires with the session.
     */
    async renew(sid: string, ttlMs: number): Promise<void> {
      const ids = await renewRecords(store, sid, ttlMs);
      const held = await apiUrls(sid, ids);
      await Promise.all(held.map((apiUrl) => licences.put(sid, apiUrl, ttlMs)));
    },

    /** Where licence `apiUrl` may be held: see licences.ts's `holders`. */
    ofLicence: licences.holders,

    remove,

    /**
     * How many connections are in each status now (for the metrics gauge): a count of every shard
     * of the index, a few at a time.
     */
    async countByStatus(): Promise<Record<'connected' | 'disconnected', number>> {
      const counts = { connected: 0, disconnected: 0 };
      for (let first = 0; first < INDEX_SHARDS; first += COUNT_BATCH) {
        const shards = Array.from(
          { length: Math.min(COUNT_BATCH, INDEX_SHARDS - first) },
          (_, n) => first + n,
        );
        for (const status of STATUSES) {
          const each = await Promise.all(
            shards.map((shard) => store.indexCount(keys.connectionIndex(status, shard))),
          );
          counts[status] += each.reduce((sum, count) => sum + count, 0);
        }
      }
      return counts;
    },
  };
}
export type ConnectionRepository = ReturnType<typeof createConnectionRepository>;

/** What the extension may see of a connection: never a token. */
export function toConnection(record: ConnectionRecord): Connection {
  return {
    id: record.id,
    status: record.status,
    api_origin: new URL(record.apiUrl).origin,
    connected_at: new Date(record.connectedAt).toISOString(),
    access_expires_at: record.tokens ? new Date(record.tokens.expiresAt).toISOString() : null,
    ...(record.disconnectedReason ? { disconnected_reason: record.disconnectedReason } : {}),
  };
}
