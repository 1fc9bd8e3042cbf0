import { ADMIN_OUTBOX, enqueue, sessionRef, type OutboxEntry } from '../ops/events.ts';
import { EVENT_SHARDS, keys } from '../store/keys.ts';
import type { Store } from '../store/types.ts';
import type { RecordAction } from './actions.ts';
import type { ActionResult, Actor, DeadLetterView } from './types.ts';
import { AdminInputError } from './walk.ts';

/** Why events are set aside (ops/outbox-heads.ts DeadLetterReason). */
const REASONS = new Set(['expired', 'outbox_full', 'backlog_full']);
/** An event id as ops/events.ts makes them: `msg_` and 22 base64url characters. */
const EVENT_ID = /^msg_[A-Za-z0-9_-]{22}$/;
/**
 * Dead letters read from each shard when a search must see them all (a reason, an id): more than
 * a shard keeps by default (EVENTS_DEAD_LETTERS_MAX 50,000 over 16 shards).
 */
const SHARD_READ_MAX = 5000;
/** Newest dead letters a shard gives the overview's count by reason. */
const REASON_SAMPLE = 200;
const NOT_FOUND: ActionResult = { ok: false, count: 0, error: 'not_found' };
const shards = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

/** A dead letter as ops/outbox-heads.ts stores it: the outbox entry and why it was set aside. */
interface StoredLetter extends OutboxEntry {
  reason: string;
  attempts?: number;
  recorded_at?: string;
  dead_at: string;
  last_outcome?: string;
}

interface Found {
  shard: number;
  raw: string;
  letter: StoredLetter;
}

const adminRef = sessionRef(ADMIN_OUTBOX);

function toView(letter: StoredLetter): DeadLetterView {
  const ref = letter.session_ref;
  return {
    id: letter.id,
    type: letter.type,
    sessionRef: ref === undefined || ref === adminRef ? null : ref,
    reason: letter.reason,
    attempts: letter.attempts ?? 0,
    recordedAt: letter.recorded_at ?? null,
    deadAt: letter.dead_at,
    lastOutcome: letter.last_outcome ?? null,
  };
}

export function checkEventId(id: string): string {
  if (!EVENT_ID.test(id))
    throw new AdminInputError('an event id is "msg_" and 22 letters, digits, "-" or "_"');
  return id;
}

/**
 * The dead letters (ops/outbox-heads.ts: a log per event shard, each member the letter's JSON):
 * listed newest first, redelivered, discarded. A redelivered event goes to the admin outbox
 * (ops/events.ts ADMIN_OUTBOX) with its id, body and session reference: a dead letter names its
 * session by reference only, and the events of its session delivered since have lost the order it
 * had anyway.
 */
export function createDeadLetters(deps: {
  store: Store;
  now: () => number;
  recordAction: RecordAction;
}) {
  const { store, now, recordAction } = deps;

  async function newest(perShard: number): Promise<Found[]> {
    const each = await Promise.all(
      shards.map(async (shard) =>
        (await store.logNewest(keys.deadLetters(shard), perShard)).map((raw) => ({
          shard,
          raw,
          letter: JSON.parse(raw) as StoredLetter,
        })),
      ),
    );
    return each.flat().sort((a, b) => b.letter.dead_at.localeCompare(a.letter.dead_at));
  }

  async function find(id: string): Promise<Found | undefined> {
    checkEventId(id);
    return (await newest(SHARD_READ_MAX)).find(({ letter }) => letter.id === id);
  }

  /**
   * Out of its shard's log. The Store has no removal of a log member, and its logAdd is the one
   * write of a log: the member is added again as of time 0 with everything older than 1 ms
   * dropped, which drops it alone (the others were added at their time), in one atomic step.
   */
  async function remove({ shard, raw }: Found): Promise<void> {
    await store.logAdd(keys.deadLetters(shard), raw, 0, {
      maxCount: Number.MAX_SAFE_INTEGER,
      minAtMs: 1,
      ttlMs: 1,
    });
  }

  return {
    async list(options: { limit: number; reason?: string }): Promise<DeadLetterView[]> {
      const { limit, reason } = options;
      if (reason !== undefined && !REASONS.has(reason))
        throw new AdminInputError(`a reason is one of ${[...REASONS].join(', ')}`);
      const found = await newest(reason === undefined ? limit : SHARD_READ_MAX);
      return found
        .filter(({ letter }) => reason === undefined || letter.reason === reason)
        .slice(0, limit)
        .map(({ letter }) => toView(letter));
    },

    /** Dead letters in all, and the newest by reason (Overview.events). */
    async counts(): Promise<{ total: number; byReason: Record<string, number> }> {
      const sizes = await Promise.all(
        shards.map((shard) => store.logSize(keys.deadLetters(shard))),
      );
      const byReason: Record<string, number> = {};
      for (const { letter } of await newest(REASON_SAMPLE))
        byReason[letter.reason] = (byReason[letter.reason] ?? 0) + 1;
      return { total: sizes.reduce((sum, size) => sum + size, 0), byReason };
    },

    /**
     * Back for delivery: into the admin outbox first, then out of the dead letters, so that an
     * instance that stops in between leaves it in both (sent again with the same id), never lost.
     */
    async redeliver(id: string, actor: Actor): Promise<ActionResult> {
      const found = await find(id);
      if (!found) return NOT_FOUND;
      const { letter } = found;
      await enqueue(store, now, ADMIN_OUTBOX, {
        id: letter.id,
        type: letter.type,
        body: letter.body,
        // A window of its own from now: its first one is over.
        at: now(),
        ...(letter.session_ref === undefined || letter.session_ref === adminRef
          ? {}
          : { session_ref: letter.session_ref }),
      });
      await remove(found);
      await recordAction(actor, 'redeliver', { event: id });
      return { ok: true, count: 1 };
    },

    async discard(id: string, actor: Actor): Promise<ActionResult> {
      const found = await find(id);
      if (!found) return NOT_FOUND;
      await remove(found);
      await recordAction(actor, 'discard', { event: id });
      return { ok: true, count: 1 };
    },
  };
}
