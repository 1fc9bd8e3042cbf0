import { createLeases } from './lease.ts';
import { eventShard, indexMember, indexShard, keys } from './keys.ts';
import { StoreUnavailableError, type Store } from './types.ts';

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
/** How often an instance that left the upgrade to another looks again (retryUpgrade). */
export const UPGRADE_RETRY_MS = 2000;
/** Members moved per batch. */
const BATCH = 500;
/** How long a moved session stays due, and a moved dead letter is kept (as format 2 keeps them). */
const SCHEDULE_KEPT_MS = 48 * 3600 * 1000;
const DEAD_LETTERS_KEPT_MS = 30 * 24 * 3600 * 1000;

export interface FormatUpgrade {
  /** The format found (1: none said), and the one the store holds now. */
  from: number;
  to: number;
  /** What moved into the shards: index members, scheduled sessions, dead letters. */
  moved: Moved;
  /** Entries of format 1 that cannot be read, taken off the old keys unmoved (onSetAside: why). */
  setAside: number;
  /**
   * This instance did not finish it: another holds the upgrade, or took it over when this one's
   * lease ran out midway. Look again with retryUpgrade.
   */
  leftToAnother: boolean;
}

interface Moved {
  indexed: number;
  scheduled: number;
  deadLetters: number;
}

/** An entry of format 1 that cannot be moved: its key, the entry, and why. */
export interface SetAside {
  key: string;
  entry: string;
  reason: string;
}

export interface UpgradeOptions {
  /** Once aborted (a SIGTERM at start-up), stop before the next batch, throwing its reason. */
  signal?: AbortSignal;
  /** Told after each batch: what is being moved, and how many of it so far. */
  onBatch?: (progress: { moving: keyof Moved; moved: number }) => void;
  onSetAside?: (setAside: SetAside) => void;
  /** Members per batch (default 500). */
  batch?: number;
}

/**
 * Brings a store written by an earlier release to DATA_FORMAT, from whichever instance takes the
 * upgrade's lease; the others serve meanwhile, reading both formats, and look again until it is
 * done (retryUpgrade). From format 1: the connections index, the events' schedule and their dead
 * letters move into their shards, batch by batch, each batch copied, then removed from the old key
 * (inBatches): an instance stopped anywhere loses nothing, and whoever takes the lease next moves
 * the rest. The format key is written once all has moved. Records need no move: they are read in
 * either format and written in the new one. A store of a later format throws DataFormatError.
 */
export async function upgradeFormat(
  store: Store,
  now: () => number,
  options: UpgradeOptions = {},
): Promise<FormatUpgrade> {
  const found = Number((await store.get(keys.dataFormat)) ?? 1);
  if (found > DATA_FORMAT)
    throw new DataFormatError(
      `the store holds data of format ${found}, and this broker writes format ${DATA_FORMAT}: run a release that knows format ${found} (docs/upgrading.md)`,
    );
  const moved: Moved = { indexed: 0, scheduled: 0, deadLetters: 0 };
  let setAside = 0;
  const done = (leftToAnother: boolean): FormatUpgrade => ({
    from: found,
    to: leftToAnother ? found : DATA_FORMAT,
    moved,
    setAside,
    leftToAnother,
  });
  if (found === DATA_FORMAT) {
    await store.set(keys.dataFormat, String(DATA_FORMAT), FORMAT_TTL_MS);
    return done(false);
  }
  const leases = createLeases(store);
  const lease = await leases.take(keys.dataFormatUpgrade, UPGRADE_LEASE_MS);
  if (!lease) return done(true);
  const run: Run = {
    store,
    now,
    options,
    batch: options.batch ?? BATCH,
    moved,
    keepLease: () => leases.renew(lease, UPGRADE_LEASE_MS),
    setAside: (key, entry, reason) => {
      setAside++;
      options.onSetAside?.({ key, entry, reason });
    },
  };
  try {
    const all =
      (await moveIndex(run, 'connected')) &&
      (await moveIndex(run, 'disconnected')) &&
      (await moveSchedule(run)) &&
      (await moveDeadLetters(run));
    if (!all) return done(true);
    await store.set(keys.dataFormat, String(DATA_FORMAT), FORMAT_TTL_MS);
    return done(false);
  } finally {
    await leases.release(lease);
  }
}

/**
 * For an instance that left the upgrade to another: looks again every UPGRADE_RETRY_MS (`wait`)
 * until the store holds DATA_FORMAT, taking the upgrade over and finishing it once the lease is
 * free (its holder stopped or died midway). Until `signal` aborts: then it throws its reason.
 */
export async function retryUpgrade(
  store: Store,
  now: () => number,
  options: UpgradeOptions & { wait: (ms: number) => Promise<void> },
): Promise<FormatUpgrade> {
  for (;;) {
    await options.wait(UPGRADE_RETRY_MS);
    options.signal?.throwIfAborted();
    try {
      const upgrade = await upgradeFormat(store, now, options);
      if (!upgrade.leftToAnother) return upgrade;
    } catch (error) {
      // A Redis that does not answer: its errors are counted and logged by the client; look again.
      if (!(error instanceof StoreUnavailableError)) throw error;
    }
  }
}

/** One upgrade under way: the store, the lease, what moved, and what is told. */
interface Run {
  store: Store;
  now: () => number;
  options: UpgradeOptions;
  batch: number;
  moved: Moved;
  /** False once the lease ran out: another instance may hold it now. */
  keepLease: () => Promise<boolean>;
  setAside: (key: string, entry: string, reason: string) => void;
}

/**
 * Moves a key of format 1, batch by batch: `read` the next batch (left in place), then `move` it:
 * copy it into the shards, then remove exactly those entries from the old key. A stop anywhere
 * leaves each entry in the old key, the new, or both; the next instance copies those again, which
 * changes nothing (every put is idempotent), and removes them. Stops before a batch once the
 * signal aborted; false once the lease is lost (its holder moves the rest).
 */
async function inBatches<T>(
  run: Run,
  moving: keyof Moved,
  read: () => Promise<T[]>,
  move: (batch: T[]) => Promise<number>,
): Promise<boolean> {
  for (;;) {
    run.options.signal?.throwIfAborted();
    const batch = await read();
    if (batch.length === 0) return true;
    run.moved[moving] += await move(batch);
    run.options.onBatch?.({ moving, moved: run.moved[moving] });
    if (!(await run.keepLease())) return false;
  }
}

/** Format 1's index (members `sid:id`, scored by expiry) into the shards of format 2. */
function moveIndex(run: Run, status: 'connected' | 'disconnected'): Promise<boolean> {
  const { store, now } = run;
  const old = keys.formerConnectionIndex(status);
  return inBatches(
    run,
    'indexed',
    () => store.sortedRange(old, run.batch),
    async (batch) => {
      // A batch's puts at once: the client pipelines them, one round trip instead of 500.
      const puts = batch.flatMap(({ member, score }) => {
        const colon = member.indexOf(':');
        const [sid, id] = [member.slice(0, colon), member.slice(colon + 1)];
        if (colon <= 0 || id === '') {
          run.setAside(old, member, 'not sid:id');
          return [];
        }
        const ttlMs = score - now();
        if (ttlMs <= 0) return [];
        return [
          store.indexPut(
            keys.connectionIndex(status, indexShard(sid)),
            indexMember(sid, id),
            ttlMs,
          ),
        ];
      });
      await Promise.all(puts);
      await Promise.all(batch.map(({ member }) => store.indexRemove(old, member)));
      return puts.length;
    },
  );
}

/** Format 1's one schedule of due sessions into the shards, each keeping its time. */
function moveSchedule(run: Run): Promise<boolean> {
  const { store } = run;
  const old = keys.formerEventsDue;
  return inBatches(
    run,
    'scheduled',
    () => store.sortedRange(old, run.batch),
    async (batch) => {
      await Promise.all(
        batch.map(({ member: sid, score }) =>
          store.schedulePut(keys.eventsDue(eventShard(sid)), sid, score, {
            onlyIfAbsent: true,
            keepMs: SCHEDULE_KEPT_MS,
          }),
        ),
      );
      await Promise.all(batch.map(({ member }) => store.scheduleRemove(old, member)));
      return batch.length;
    },
  );
}

/** Format 1's one list of dead letters into the shards' logs (kept 30 days from their death). */
function moveDeadLetters(run: Run): Promise<boolean> {
  const { store, now } = run;
  const old = keys.formerDeadLetters;
  return inBatches(
    run,
    'deadLetters',
    () => store.listRange(old, 0, run.batch - 1),
    async (batch) => {
      const logged = batch.flatMap((raw) => {
        const letter = parseObject(raw);
        if (!letter) {
          run.setAside(old, raw, 'not a JSON object');
          return [];
        }
        const at = Date.parse(typeof letter.dead_at === 'string' ? letter.dead_at : '') || now();
        // A dead letter names its session by reference only: that spreads them as well.
        const ref = typeof letter.session_ref === 'string' ? letter.session_ref : '';
        return [
          store.logAdd(keys.deadLetters(eventShard(ref.replace(/^ses_/, ''))), raw, at, {
            maxCount: Number.MAX_SAFE_INTEGER,
            minAtMs: now() - DEAD_LETTERS_KEPT_MS,
            ttlMs: DEAD_LETTERS_KEPT_MS,
          }),
        ];
      });
      await Promise.all(logged);
      // In order, each only while it is still the head: exactly the batch read leaves the list.
      await Promise.all(batch.map((raw) => store.listPopIfHead(old, raw)));
      return logged.length;
    },
  );
}

/** `raw` as a JSON object, or null when it is not one. */
function parseObject(raw: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
