import type { Logger } from 'pino';
import { eventConnection } from '../events.ts';
import { isStoreDown } from '../../store/errors.ts';
import type { ConnectionRecord, ConnectionRepository, LoadedConnection } from '../records.ts';
import type { RefreshBackoff } from './refresh-backoff.ts';
import type { HeldLock, RefreshLock } from './lock.ts';

/** How often a rotated pair the store did not take is offered to it again. */
const STORE_RETRY_MS = 250;

/**
 * A rotated pair, stored before anyone uses it (step 4 of a refresh, refresh/service.ts): the
 * provider has already used up the old refresh token, so this pair must not be lost to a write
 * that lost a race, a store that went back in time, or a store that is down for a moment.
 */
export function createRotatedPairs(deps: {
  connections: ConnectionRepository;
  lock: RefreshLock;
  backoffs: RefreshBackoff;
  log: Logger;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}) {
  const { connections, lock, backoffs, log, now } = deps;

  /** Step 4, rotated: store the new pair (versioned) before anyone uses it. */
  async function store(
    sid: string,
    current: LoadedConnection,
    tokens: NonNullable<ConnectionRecord['tokens']>,
    lease: HeldLock,
  ): Promise<LoadedConnection> {
    const { id } = current.record;
    const next: ConnectionRecord = { ...current.record, tokens, refreshedAt: now() };
    delete next.refreshLost;
    const pair: Pair = {
      next,
      expected: current.version,
      used: current.record.tokens?.refreshToken,
    };
    // The store going away at any point here (the write, or the look after a refused one) leaves
    // this pair the only one: the lock is kept and the pair offered again while the lease lasts.
    const result = await saved(sid, pair).catch((error: unknown) => {
      if (isStoreDown(error)) {
        lease.kept = true;
        void storeWhenBack(sid, pair, lease);
      }
      throw error;
    });
    if (result?.record.tokens !== tokens) {
      // A holder whose lease ran out: a newer pair is stored; keep that one.
      log.warn({ connection: id }, 'refresh finished after its lease; keeping the newer pair');
      return result ?? current;
    }
    log.info({ connection: id, reason: 'rotated' }, 'refreshed access token');
    return result;
  }

  /** The pair's versioned write, or, refused, what afterRefused makes of it: what the store holds. */
  async function saved(sid: string, pair: Pair): Promise<LoadedConnection | null> {
    if (await connections.save(sid, pair.next, pair.expected))
      return { record: pair.next, version: pair.expected + 1 };
    return afterRefused(sid, pair);
  }

  /**
   * A rotated pair the versioned write refused. A higher stored version is a newer state that
   * another holder stored after this one's lease ran out: it stands, unless it is the disconnection
   * that holder's refresh caused. It read the same version as this one, so it presented the same
   * refresh token, which this one's request had used up: the provider refused a second use, and the
   * pair in hand is the newest there is. It is written over that disconnection, which is reported
   * undone. A lower stored version means the store went back in time (a failover promoted a replica
   * that had not received the last writes): the stored pair is already used up at the provider and
   * the one in hand is the only valid one, so it is written over the stale record. A stored record
   * that still holds the refresh token this refresh used up was written without a new pair (a 401
   * noted, a lost answer marked): the pair in hand is newer, and written over it. Answers what the
   * store holds afterwards.
   */
  async function afterRefused(sid: string, pair: Pair): Promise<LoadedConnection | null> {
    const { next, expected, used } = pair;
    const stored = await connections.load(sid, next.id);
    if (!stored) return null;
    if (
      stored.version > expected &&
      used !== undefined &&
      stored.record.tokens?.refreshToken === used
    ) {
      // What it noted stays: a 401 this pair's retry did not cure still holds 401s back.
      const { uncuredAt } = stored.record;
      const over = uncuredAt === undefined ? next : { ...next, uncuredAt };
      if (await connections.save(sid, over, stored.version))
        return { record: over, version: stored.version + 1 };
    }
    if (stored.version < expected && (await connections.save(sid, next, stored.version))) {
      log.warn(
        { connection: next.id, stored: stored.version, expected },
        'the store had lost writes (a failover?): stored the rotated pair over the older one',
      );
      return { record: next, version: stored.version + 1 };
    }
    if (
      stored.version === expected + 1 &&
      refusedSameToken(stored.record) &&
      (await connections.save(sid, next, stored.version, {
        type: 'connection.reconnected',
        connection: eventConnection(next),
      }))
    ) {
      log.warn(
        { connection: next.id },
        'refresh finished after its lease, and another holder had presented the refresh token it used up: stored the newest pair over that disconnection',
      );
      return { record: next, version: stored.version + 1 };
    }
    return stored;
  }

  /**
   * Stores a rotated pair the store did not take because it was down: the provider has already
   * used up the old refresh token, so this pair is the only one left. Offered again as many times
   * as a lease holds retries, and the lock is released only then. While the lease lasts, no other
   * holder refreshes with the used token; when Redis is slow (each attempt waits out a command's
   * bound) the last attempts come after it, and a successor that read the record first may present
   * the used token: the provider refuses it, and the successor finds this pair once stored (the
   * soak's window "the store stayed down past the lease"). Storing late is still the better end:
   * the pair is the only one left. The versioned write keeps whatever someone else stored since.
   */
  async function storeWhenBack(sid: string, pair: Pair, lease: HeldLock): Promise<void> {
    const record = pair.next;
    for (let attempt = 0; attempt < Math.ceil(lock.leaseMs / STORE_RETRY_MS); attempt++) {
      await deps.sleep(STORE_RETRY_MS);
      try {
        // Stored now, or by an earlier attempt that Redis applied without answering in time:
        // either way the store holds this pair.
        const stored = await saved(sid, pair);
        const written = stored?.record.tokens?.refreshToken === record.tokens?.refreshToken;
        if (written) await backoffs.clear(sid, record.id);
        await lock.release(lease);
        log.warn(
          { connection: record.id, written },
          'the store answered again; stored the rotated pair unless a newer one was there',
        );
        return;
      } catch (error) {
        if (!isStoreDown(error)) {
          log.error({ err: error, connection: record.id }, 'could not store a rotated pair');
          return;
        }
      }
    }
    log.error(
      { connection: record.id },
      'the store stayed down for the whole lease; a rotated pair is lost',
    );
  }

  return { store };
}

/**
 * A rotated pair on its way to the store: the record with it, the version it was read at, and the
 * refresh token it used up (undefined: none was stored).
 */
interface Pair {
  next: ConnectionRecord;
  expected: number;
  used: string | undefined;
}

/** A disconnection a refresh's rejection made (refresh/service.ts's `disconnect`). */
function refusedSameToken(record: ConnectionRecord): boolean {
  return (
    record.status === 'disconnected' &&
    (record.disconnectedReason === 'refresh_rejected' ||
      record.disconnectedReason === 'refresh_response_lost')
  );
}
