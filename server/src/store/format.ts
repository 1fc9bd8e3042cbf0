import { moveFormat1, type Moved, type MoveRun } from './format1/moves.ts';
import { createLeases } from './lease.ts';
import { keys } from './keys.ts';
import { indexLicences, type ApiUrlOf, type LicenceRun, type Unreadable } from './licences.ts';
import { StoreUnavailableError, type Store } from './types.ts';

/**
 * The format of the data this release writes (docs/upgrading.md):
 *
 * 1. Release 0.1: records as hashes {v, d}; one connections index `baton:{stats}:connections:*`;
 *    one events schedule and dead letters list on `{events}`. No `baton:format` key.
 * 2. Release 1.0: records as strings `<version>:<value>`; the index, the schedule and the dead
 *    letters spread over shards (keys.ts).
 * 3. Release 2.0: the licence index (keys.licenceIndex: the sessions that hold each api_url).
 *    Nothing else changed, so a release of format 2 still serving while this one upgrades reads
 *    and writes it as before: a connection it writes gets no index entry, which only means a
 *    lookup by licence misses it until this release writes it or renews its session.
 */
export const DATA_FORMAT = 3;

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

/** What the upgrade put in place: format 1's moves, and the licences indexed (format 3). */
export interface Upgraded extends Moved {
  licences: number;
}

export interface FormatUpgrade {
  /** The format found (1: none said), and the one the store holds now. */
  from: number;
  to: number;
  /**
   * What moved into the shards (index members, scheduled sessions, dead letters), and the
   * connections whose licence was indexed.
   */
  moved: Upgraded;
  /** Entries of format 1 that cannot be read, taken off the old keys unmoved (onSetAside: why). */
  setAside: number;
  /** Connection records that cannot be opened, left in place unindexed (onUnreadable: which). */
  unreadable: number;
  /**
   * This instance did not finish it: another holds the upgrade, or took it over when this one's
   * lease ran out midway. Look again with retryUpgrade.
   */
  leftToAnother: boolean;
}

/** An entry of format 1 that cannot be moved: its key, the entry, and why. */
export interface SetAside {
  key: string;
  entry: string;
  reason: string;
}

export interface UpgradeOptions {
  /** Opens a connection record for its api_url, to index its licence (format 3). */
  apiUrlOf: ApiUrlOf;
  /** Once aborted (a SIGTERM at start-up), stop before the next batch, throwing its reason. */
  signal?: AbortSignal;
  /** Told after each batch: what is being moved, and how many of it so far. */
  onBatch?: (progress: { moving: keyof Upgraded; moved: number }) => void;
  onSetAside?: (setAside: SetAside) => void;
  onUnreadable?: (unreadable: Unreadable) => void;
  /** Members per batch (default 500). */
  batch?: number;
}

/**
 * Brings a store written by an earlier release to DATA_FORMAT, from whichever instance takes the
 * upgrade's lease; the others serve meanwhile, reading both formats, and look again until it is
 * done (retryUpgrade). From format 1 (format1/moves.ts): the connections index, the events'
 * schedule and their dead letters move into their shards, batch by batch, each batch copied, then
 * removed from the old key (inBatches): an instance stopped anywhere loses nothing, and whoever
 * takes the lease next moves the rest. Records need no move: they are read in either format
 * (format1/redis.ts) and written in the new one. From format 1 or 2 (licences.ts): every record's
 * licence is indexed, batch by batch; a stop leaves the index partly built, and the next instance
 * walks again (a put twice changes nothing). The format key is written once all is done. A store
 * of a later format throws DataFormatError.
 */
export async function upgradeFormat(
  store: Store,
  now: () => number,
  options: UpgradeOptions,
): Promise<FormatUpgrade> {
  const found = Number((await store.get(keys.dataFormat)) ?? 1);
  if (found > DATA_FORMAT)
    throw new DataFormatError(
      `the store holds data of format ${found}, and this broker writes format ${DATA_FORMAT}: run a release that knows format ${found} (docs/upgrading.md)`,
    );
  const moved: Upgraded = { indexed: 0, scheduled: 0, deadLetters: 0, licences: 0 };
  let [setAside, unreadable] = [0, 0];
  const done = (leftToAnother: boolean): FormatUpgrade => ({
    from: found,
    to: leftToAnother ? found : DATA_FORMAT,
    moved,
    setAside,
    unreadable,
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
    apiUrlOf: options.apiUrlOf,
    unreadable: (each) => {
      unreadable++;
      options.onUnreadable?.(each);
    },
    inBatches: (moving, read, move) => inBatches(run, moving, read, move),
  };
  try {
    if (found < 2 && !(await moveFormat1(run))) return done(true);
    if (!(await indexLicences(run))) return done(true);
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
interface Run extends Omit<MoveRun, 'inBatches'>, Omit<LicenceRun, 'inBatches'> {
  options: UpgradeOptions;
  moved: Upgraded;
  inBatches: <T>(
    moving: keyof Upgraded,
    read: () => Promise<T[]>,
    move: (batch: T[]) => Promise<number>,
  ) => Promise<boolean>;
  /** False once the lease ran out: another instance may hold it now. */
  keepLease: () => Promise<boolean>;
}

/**
 * Moves an old key, batch by batch: `read` the next batch (left in place), then `move` it:
 * copy it into the shards, then remove exactly those entries from the old key. A stop anywhere
 * leaves each entry in the old key, the new, or both; the next instance copies those again, which
 * changes nothing (every put is idempotent), and removes them. Stops before a batch once the
 * signal aborted; false once the lease is lost (its holder moves the rest).
 */
async function inBatches<T>(
  run: Run,
  moving: keyof Upgraded,
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
