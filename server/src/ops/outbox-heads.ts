import type { Logger } from 'pino';
import { EVENT_SHARDS, eventShard, keys } from '../store/keys.ts';
import type { Store } from '../store/types.ts';
import { OUTBOX_RETENTION_MS, sessionRef, type EventLimits, type OutboxEntry } from './events.ts';

/** Why an event was set aside: its window ended, or a cap was reached (docs/events.md). */
export type DeadLetterReason = 'expired' | 'outbox_full' | 'backlog_full';

/** What this instance's delivery did, for the metrics. */
export interface DeliveryCounters {
  delivered: number;
  failedAttempts: number;
  deadLettered: Record<DeadLetterReason, number>;
  /**
   * Dead letters dropped to keep the dead letters within their age and count, or not kept because
   * their session already had its share of them.
   */
  deadLettersDropped: number;
}

/** The attempts at a session's head event so far (one key per session, beside its outbox). */
export interface Attempts {
  id: string;
  count: number;
  first: number;
  /** What the last attempt got, for a dead letter. */
  outcome?: string;
  /** When the next attempt is due (the back-off's end): a wake before it leaves the head be. */
  next?: number;
}

/**
 * How the head event of a session's outbox leaves it: delivered (popped) or set aside as a dead
 * letter, each counted out of the backlog; and what its attempts so far were. Every step is on the
 * session's keys or its shard's, under the session's delivery lease (ops/event-delivery.ts).
 */
export function createOutboxHeads(deps: {
  store: Store;
  now: () => number;
  log: Logger;
  limits: EventLimits;
  counters: DeliveryCounters;
}) {
  const { store, now, log, limits, counters } = deps;
  const deadLettersPerShard = Math.max(1, Math.ceil(limits.deadLetters / EVENT_SHARDS));
  /**
   * A session's share of its shard's dead letters: past it (within the dead letters' retention
   * of its last), its dead letters are counted and not kept, so that one session's overflow
   * cannot push the other sessions' dead letters out.
   */
  const deadLettersPerSession = Math.max(1, Math.floor(deadLettersPerShard / 10));

  const attemptsOf = async (sid: string, id: string): Promise<Attempts | null> => {
    const stored = await store.get(keys.outboxAttempts(sid));
    const attempts = stored === null ? null : (JSON.parse(stored) as Attempts);
    return attempts?.id === id ? attempts : null;
  };

  /** The head `raw` left its outbox: it is counted out of the backlog. */
  async function popped(sid: string, raw: string): Promise<boolean> {
    if (!(await store.listPopIfHead(keys.outbox(sid), raw))) return false;
    await Promise.all([
      store.del(keys.outboxAttempts(sid)),
      store.counterAdd(keys.eventsBacklog(eventShard(sid)), -1, OUTBOX_RETENTION_MS),
    ]);
    return true;
  }

  /**
   * Keeps `letter` in the shard's dead letters, within their bounds, unless the session has had
   * its share of them; counts what is dropped either way.
   */
  async function kept(sid: string, letter: string, at: number): Promise<void> {
    const retention = limits.deadLetterRetentionMs;
    const count = await store.counterAdd(keys.outboxDeadLetters(sid), 1, retention);
    if (count > deadLettersPerSession) {
      counters.deadLettersDropped++;
      return;
    }
    counters.deadLettersDropped += await store.logAdd(
      keys.deadLetters(eventShard(sid)),
      letter,
      at,
      {
        maxCount: deadLettersPerShard,
        minAtMs: at - retention,
        ttlMs: retention,
      },
    );
  }

  /**
   * The head `raw` set aside: into the dead letters first, then out of the outbox, so that an
   * instance that stops in between leaves it in both (and sets it aside again), never in neither.
   */
  async function deadLetter(
    sid: string,
    raw: string,
    reason: DeadLetterReason,
    outcome: string | undefined,
  ): Promise<void> {
    const event = JSON.parse(raw) as OutboxEntry;
    const attempts = await attemptsOf(sid, event.id);
    const at = now();
    const letter = JSON.stringify({
      ...event,
      session_ref: event.session_ref ?? sessionRef(sid),
      reason,
      attempts: attempts?.count ?? 0,
      ...(event.at === undefined ? {} : { recorded_at: new Date(event.at).toISOString() }),
      ...(attempts ? { first_attempt_at: new Date(attempts.first).toISOString() } : {}),
      dead_at: new Date(at).toISOString(),
      last_outcome: outcome ?? attempts?.outcome ?? 'not attempted',
    });
    await kept(sid, letter, at);
    if (!(await popped(sid, raw))) return;
    counters.deadLettered[reason]++;
    log.error(
      { event: event.id, type: event.type, reason, attempts: attempts?.count ?? 0 },
      'event not delivered: moved to the dead letters',
    );
  }

  return { attemptsOf, popped, deadLetter };
}
