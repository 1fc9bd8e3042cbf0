import { createLeases } from './lease.ts';
import { eventShard, indexMember, indexShard, keys } from './keys.ts';
import type { Store } from './types.ts';

/**
 * The format of the data this release writes (docs/upgrading.md):
 *
 * 1. Release 0.1: records as hashes {v, d}; one connections index `baton:{stats}:connections:*`;
 *    one events schedule and dead letters list on `{events}`. No `baton:format` key.
 * 2. Release 1.0: records as strings `<version>:<value>`; the index, the schedule and the dead
 *    letters spread over shards (keys.ts).
 */
export const DATA_FORMAT = 2;

/** The store holds data of a format this release does not know: an older broker on newer data. */
export class DataFormatError extends Error {
  override name = 'DataFormatError';
}

/** How long the format key lives; every start renews it. */
const FORMAT_TTL_MS = 400 * 24 * 3600 * 1000;
/** How long the instance that upgrades the data holds the upgrade (renewed at each batch). */
const UPGRADE_LEASE_MS = 60_000;
/** Members moved per batch. */
const BATCH = 500;

export interface FormatUpgrade {
  /** The format found (1: none said), and the one the store holds now. */
  from: number;
  to: number;
  /** What moved into the shards: index members, scheduled sessions, dead letters. */
  moved: { indexed: number; scheduled: number; deadLetters: number };
  /** Another instance was upgrading the data: this one left it to it. */
  leftToAnother: boolean;
}

/**
 * Brings a store written by an earlier release to DATA_FORMAT, once, from whichever instance
 * starts first (a lease: the others start at once, reading both formats meanwhile). From format
 * 1: the connections index, the events' schedule and their dead letters move into their shards,
 * batch by batch; each batch can be taken again if the instance stops midway (members are taken
 * from the old key only as they are put in the new). Records need no move: they are read in either
 * format and written in the new one. A store of a later format throws DataFormatError.
 */
export async function upgradeFormat(store: Store, now: () => number): Promise<FormatUpgrade> {
  const found = Number((await store.get(keys.dataFormat)) ?? 1);
  if (found > DATA_FORMAT)
    throw new DataFormatError(
      `the store holds data of format ${found}, and this broker writes format ${DATA_FORMAT}: run a release that knows format ${found} (docs/upgrading.md)`,
    );
  const moved = { indexed: 0, scheduled: 0, deadLetters: 0 };
  const done = (leftToAnother: boolean): FormatUpgrade => ({
    from: found,
    to: leftToAnother ? found : DATA_FORMAT,
    moved,
    leftToAnother,
  });
  if (found === DATA_FORMAT) {
    await store.set(keys.dataFormat, String(DATA_FORMAT), FORMAT_TTL_MS);
    return done(false);
  }
  const leases = createLeases(store);
  const lease = await leases.take(keys.dataFormatUpgrade, UPGRADE_LEASE_MS);
  if (!lease) return done(true);
  const keepLease = () => leases.renew(lease, UPGRADE_LEASE_MS);
  try {
    for (const status of ['connected', 'disconnected'] as const)
      moved.indexed += await moveIndex(store, status, now, keepLease);
    moved.scheduled = await moveSchedule(store, keepLease);
    moved.deadLetters = await moveDeadLetters(store, now);
    await store.set(keys.dataFormat, String(DATA_FORMAT), FORMAT_TTL_MS);
    return done(false);
  } finally {
    await leases.release(lease);
  }
}

/** Format 1's index (members `sid:id`, scored by expiry) into the shards of format 2. */
async function moveIndex(
  store: Store,
  status: 'connected' | 'disconnected',
  now: () => number,
  keepLease: () => Promise<boolean>,
): Promise<number> {
  const old = keys.formerConnectionIndex(status);
  let moved = 0;
  for (;;) {
    const batch = await store.sortedTake(old, BATCH);
    if (batch.length === 0) return moved;
    // A batch's puts at once: the client pipelines them, one round trip instead of 500.
    const puts = batch.flatMap(({ member, score }) => {
      const colon = member.indexOf(':');
      const [sid, id] = [member.slice(0, colon), member.slice(colon + 1)];
      const ttlMs = score - now();
      if (colon <= 0 || ttlMs <= 0) return [];
      return [
        store.indexPut(keys.connectionIndex(status, indexShard(sid)), indexMember(sid, id), ttlMs),
      ];
    });
    await Promise.all(puts);
    moved += puts.length;
    await keepLease();
  }
}

/** Format 1's one schedule of due sessions into the shards, each keeping its time. */
async function moveSchedule(store: Store, keepLease: () => Promise<boolean>): Promise<number> {
  const old = keys.formerEventsDue;
  let moved = 0;
  for (;;) {
    // Taken, then put: an instance stopped in between leaves those sessions to `admin events
    // sweep` (their outboxes are still there).
    const taken = await store.sortedTake(old, BATCH);
    if (taken.length === 0) return moved;
    await Promise.all(
      taken.map(({ member: sid, score }) =>
        store.schedulePut(keys.eventsDue(eventShard(sid)), sid, score, {
          onlyIfAbsent: true,
          keepMs: 48 * 3600 * 1000,
        }),
      ),
    );
    moved += taken.length;
    await keepLease();
  }
}

/** Format 1's one list of dead letters into the shards' logs (kept 30 days from their death). */
async function moveDeadLetters(store: Store, now: () => number): Promise<number> {
  const old = keys.formerDeadLetters;
  const letters = await store.listRange(old, 0, -1);
  const retentionMs = 30 * 24 * 3600 * 1000;
  for (let from = 0; from < letters.length; from += BATCH)
    await Promise.all(
      letters.slice(from, from + BATCH).map((raw) => {
        const letter = JSON.parse(raw) as { session_ref?: string; dead_at?: string };
        const at = Date.parse(letter.dead_at ?? '') || now();
        // A dead letter names its session by reference only: that spreads them as well.
        const shard = eventShard((letter.session_ref ?? '').replace(/^ses_/, ''));
        return store.logAdd(keys.deadLetters(shard), raw, at, {
          maxCount: Number.MAX_SAFE_INTEGER,
          minAtMs: now() - retentionMs,
          ttlMs: retentionMs,
        });
      }),
    );
  await store.del(old);
  return letters.length;
}
