import { eventShard, indexMember, indexShard, keys } from '../keys.ts';
import type { Store } from '../types.ts';
import { format1Keys } from './keys.ts';

/** What the upgrade from format 1 moved into the shards: index members, sessions, dead letters. */
export interface Moved {
  indexed: number;
  scheduled: number;
  deadLetters: number;
}

/** What the moves need of the upgrade under way (../format.ts). */
export interface MoveRun {
  store: Store;
  now: () => number;
  /** Members per batch. */
  batch: number;
  /** An entry that cannot be moved, taken off its key unmoved: its key, the entry, and why. */
  setAside: (key: string, entry: string, reason: string) => void;
  /**
   * `read` the next batch (left in place), then `move` it (answering how many it moved), until
   * none is left: true; false once the lease is lost (its holder moves the rest).
   */
  inBatches: <T>(
    moving: keyof Moved,
    read: () => Promise<T[]>,
    move: (batch: T[]) => Promise<number>,
  ) => Promise<boolean>;
}

/** How long a moved session stays due, and a moved dead letter is kept (as format 2 keeps them). */
const SCHEDULE_KEPT_MS = 48 * 3600 * 1000;
const DEAD_LETTERS_KEPT_MS = 30 * 24 * 3600 * 1000;

/**
 * Format 1's keys into format 2's shards, one after the other: the connections index (each
 * status), the events' schedule, their dead letters. Each batch is copied, then removed from the
 * old key: a copy made twice changes nothing (every put is idempotent). False once the lease is
 * lost midway.
 */
export async function moveFormat1(run: MoveRun): Promise<boolean> {
  return (
    (await moveIndex(run, 'connected')) &&
    (await moveIndex(run, 'disconnected')) &&
    (await moveSchedule(run)) &&
    (await moveDeadLetters(run))
  );
}

/** Format 1's index (members `sid:id`, scored by expiry) into the shards of format 2. */
function moveIndex(run: MoveRun, status: 'connected' | 'disconnected'): Promise<boolean> {
  const { store, now } = run;
  const old = format1Keys.connectionIndex(status);
  return run.inBatches(
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
function moveSchedule(run: MoveRun): Promise<boolean> {
  const { store } = run;
  const old = format1Keys.eventsDue;
  return run.inBatches(
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
function moveDeadLetters(run: MoveRun): Promise<boolean> {
  const { store, now } = run;
  const old = format1Keys.deadLetters;
  return run.inBatches(
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
