import { trimOldest } from '../../base/evicting-map.ts';
import { readHashRecord } from '../format1/redis.ts';
import type { Store, Versioned } from '../types.ts';
import { bounded, trackedAnswers } from './clients.ts';
import type { Commands } from './commands.ts';
import type { TrackedAnswers } from './tracked.ts';

/**
 * A record read untracked with its session (`get`'s `alongside`) is lent to the next cached read of
 * its key within this long: the call that checked the session, reading its record next.
 */
const LENT_MS = 100;
/** Lent answers no call took (it failed between its session check and its record read). */
const LENT_MAX = 1024;

/** A cached answer is used only while Redis has answered within this long... */
export const LIVENESS_MS = 1000;
/** ...which a PING this often keeps so while Redis is well, even when every read is cached. */
const HEARTBEAT_MS = 250;

/** `<version>:<value>` as a Versioned, frozen (kept answers are shared), or null if malformed. */
function parseVersioned(raw: string): Versioned | null {
  const colon = raw.indexOf(':');
  const version = Number(raw.slice(0, colon));
  return colon > 0 && Number.isInteger(version)
    ? Object.freeze({ version, value: raw.slice(colon + 1) })
    : null;
}

/**
 * The Redis store's reads of strings and versioned records (Store.get, Store.getVersioned): from
 * the answers kept in process (tracked.ts) while Redis vouches for them, else from Redis. Starts
 * the heartbeat that cached reads depend on; `stop` stops it.
 */
export function createReads(
  commands: Commands,
  clock: () => number,
): Pick<Store, 'get' | 'getVersioned'> & { stop(): void } {
  const { redis, guard, onError } = commands;
  const { client } = redis;
  /** When each master last answered a PING (by address; '' where one master holds every key). */
  const answeredAt = new Map<string, number>();
  const answers = trackedAnswers(client);
  /**
   * A PING is never answered from the cache: only Redis itself keeps the copies trusted. Every
   * master is asked, and vouches only for its own keys: on a Cluster, one healthy node must not
   * keep cached answers alive for keys whose master stopped answering (a revocation written
   * elsewhere after a failover would never reach this process's copies).
   */
  const heartbeat = setInterval(() => {
    void redis
      .pingMasters((command) => bounded(command))
      .then((pinged) => {
        const at = clock();
        for (const { address, answered } of pinged) if (answered) answeredAt.set(address, at);
        // A master that went silent may come back still thinking itself master after a failover:
        // nothing it vouched for before may be trusted again on its word, so every kept answer goes.
        if (pinged.some(({ answered }) => !answered)) {
          onError();
          answers?.forget(null);
        }
      });
  }, HEARTBEAT_MS).unref();
  const vouched = (key: string): boolean =>
    clock() - (answeredAt.get(redis.nodeOf(key)) ?? -Infinity) < LIVENESS_MS;
  /**
   * A tracked read: the kept answer while Redis vouches for this process (its invalidations still
   * arrive), else Redis's own, kept for next time. A key not known to exist (the first read of a
   * session, or an unknown token's) is read `untracked` when there is such a read, and nothing is
   * kept: Redis would otherwise remember every unknown token's key for good. Absent keys are never
   * kept: a caller trying unknown tokens must not crowd out the live ones.
   */
  const tracked = async <T extends NonNullable<unknown>>(
    key: string,
    options: { cached?: boolean },
    read: () => Promise<T | null>,
    untracked?: () => Promise<T | null>,
  ): Promise<T | null> => {
    if (!answers || options.cached !== true || !vouched(key)) return guard(read);
    const kept = answers.recall(key);
    if (kept !== undefined) return kept as T;
    if (untracked && !answers.known(key)) {
      const answer = await guard(untracked);
      if (answer !== null) answers.found(key);
      return answer;
    }
    const epoch = answers.epoch;
    const answer = await guard(read);
    if (answer !== null) answers.remember(key, answer, epoch);
    return answer;
  };
  /**
   * Answers read untracked beside a session, each lent once to the call that read it (LENT_MS):
   * never kept, as no invalidation would reach them.
   */
  const lent = new Map<string, { answer: Versioned | null; at: number }>();
  /** The answer lent for `key` (null: absent), taken (once), if it was read within LENT_MS. */
  const borrow = (key: string): { answer: Versioned | null } | undefined => {
    const borrowed = lent.get(key);
    if (borrowed === undefined) return undefined;
    lent.delete(key);
    return clock() - borrowed.at < LENT_MS ? borrowed : undefined;
  };

  /**
   * A versioned value, stored as `<version>:<value>` (format 2) or as a hash (format 1). `command`:
   * GET, tracked; or GETEX, which changes nothing and which Redis does not track (a write command).
   */
  const readVersioned = async (
    key: string,
    command: 'GET' | 'GETEX' = 'GET',
  ): Promise<Versioned | null> => {
    let raw: unknown;
    try {
      raw = await redis.sendCommand(key, [command, key]);
    } catch (error) {
      raw = await readHashRecord(error, key, (source, keys) => client.eval(source, { keys }));
    }
    return typeof raw === 'string' ? parseVersioned(raw) : null;
  };

  /** A string and a versioned value on its slot, read (tracked) and kept in one round trip. */
  const readTogether = async (
    kept: TrackedAnswers,
    first: string,
    second: string,
  ): Promise<string | null> => {
    const epoch = kept.epoch;
    // MGET, not a script: both keys share a slot, and a format-1 record (a hash) reads as nil,
    // as an absent one does. Redis tracks both for the cache, and runs no Lua on this path.
    const [value, versioned] = (await guard(() =>
      redis.sendCommand(first, ['MGET', first, second]),
    )) as [string | null, string | null];
    const record = typeof versioned === 'string' ? parseVersioned(versioned) : null;
    if (record !== null) kept.remember(second, record, epoch);
    if (typeof value !== 'string') return null;
    kept.remember(first, value, epoch);
    return value;
  };
  /**
   * A session and the record its call reads next, in one round trip, the record untracked (see
   * `tracked`): it is not known to exist, and a session may name a connection it does not have. The
   * session is read tracked and kept when it is known to exist (`track`), else untracked too: two
   * commands written together. An absent record is lent as absent: a call naming no connection of
   * its session gets its 404 without another read, and without Redis tracking a key that does not
   * exist. A record still in format 1 (a hash) answers WRONGTYPE, and is read alone, as is one not
   * lent in time.
   */
  const readUntracked = async (
    kept: TrackedAnswers,
    first: string,
    second: string,
    track: boolean,
  ): Promise<string | null> => {
    const epoch = kept.epoch;
    const [value, versioned] = await guard(() =>
      Promise.all([
        redis.sendCommand(first, [track ? 'GET' : 'GETEX', first]) as Promise<string | null>,
        (redis.sendCommand(first, ['GETEX', second]) as Promise<string | null>).catch(
          () => undefined,
        ),
      ]),
    );
    if (typeof value !== 'string') return null;
    if (track) kept.remember(first, value, epoch);
    else kept.found(first);
    const answer =
      typeof versioned === 'string' ? (parseVersioned(versioned) ?? undefined) : versioned;
    if (answer !== undefined) {
      if (answer !== null) kept.found(second);
      lent.set(second, { answer, at: clock() });
      trimOldest(lent, LENT_MAX);
    }
    return value;
  };

  /**
   * A call's session and the record it reads next: the kept session, else both in one round trip
   * whenever neither is kept: each tracked (and kept) once it is known to exist, untracked before.
   * Null: `tracked` reads the session alone (Redis not vouched for, or its record kept).
   */
  const getWith = (
    key: string,
    alongside: string,
    kept: TrackedAnswers,
  ): Promise<string | null> | null => {
    if (!vouched(key)) return null;
    // A kept session (every call of a user this broker keeps) is answered here, looked up once.
    const session = kept.recall(key);
    if (session !== undefined) return Promise.resolve(session as string);
    if (!kept.known(key)) return readUntracked(kept, key, alongside, false);
    if (kept.recall(alongside) !== undefined) return null;
    return kept.known(alongside)
      ? readTogether(kept, key, alongside)
      : readUntracked(kept, key, alongside, true);
  };

  return {
    get: (key, options = {}) =>
      (answers && options.alongside !== undefined && options.cached === true
        ? getWith(key, options.alongside, answers)
        : null) ??
      tracked(
        key,
        options,
        async () => (await redis.sendCommand(key, ['GET', key])) as string | null,
        // GETEX without options changes nothing, and Redis tracks no key a write command reads.
        async () => (await redis.sendCommand(key, ['GETEX', key])) as string | null,
      ),
    getVersioned: async (key, options = {}) => {
      const borrowed = options.cached === true && lent.size > 0 ? borrow(key) : undefined;
      return borrowed
        ? borrowed.answer
        : tracked(
            key,
            options,
            () => readVersioned(key),
            () => readVersioned(key, 'GETEX'),
          );
    },
    stop: () => clearInterval(heartbeat),
  };
}
