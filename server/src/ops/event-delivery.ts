import type { Logger } from 'pino';
import { backoffMs, type BackoffShape } from '../base/backoff.ts';
import { EVENT_SHARDS, eventShard, keys } from '../store/keys.ts';
import { createLeases } from '../store/lease.ts';
import { createOutboxHeads, type Attempts, type DeliveryCounters } from './outbox-heads.ts';
import { createWebhook } from './webhook.ts';
import { StoreUnavailableError, type Store } from '../store/types.ts';
import { DEFAULT_EVENT_LIMITS } from '../base/defaults.ts';
import { outboxCap, OUTBOX_RETENTION_MS, type EventLimits, type OutboxEntry } from './events.ts';

/**
 * Delivers the outboxes (ops/events.ts) to EVENTS_WEBHOOK_URL, from every instance:
 *
 * - A session's outbox is delivered by one instance at a time (a lease in the store), head first,
 *   and its head leaves only once answered 2xx: events of a session, and so of each of its
 *   connections, arrive in order. Delivery is at least once: an instance killed between the
 *   receiver's answer and the pop sends that event again, with the same `webhook-id`.
 * - A failed attempt (no answer, a timeout, any status but 2xx) is tried again after an
 *   exponential back-off with jitter (5 s doubling to 1 h), or after the receiver's `Retry-After`.
 * - Every event leaves its outbox delivered or dead-lettered, never by a time to live: one still
 *   undelivered 24 h after it was recorded is dead-lettered (`expired`), and every attempt keeps
 *   its outbox alive. At the caps (EventLimits) the oldest waiting events are dead-lettered
 *   (`outbox_full`, `backlog_full`). Dead letters are kept, bounded by age and count, for the
 *   admin CLI; each is counted in `counters.deadLettered`.
 * - Sessions due for delivery sit in a schedule on the store spread over EVENT_SHARDS keys, on
 *   this process's clock (injected: a test runs simulated days in milliseconds).
 */
export type { DeadLetterReason, DeliveryCounters } from './outbox-heads.ts';

export interface DeliveryOptions {
  store: Store;
  url: string;
  secrets: readonly Buffer[];
  fetch: typeof globalThis.fetch;
  now: () => number;
  log: Logger;
  limits?: EventLimits;
  /** In [0, 1): the back-off's jitter (default Math.random). */
  random?: () => number;
  /** How long an instance may hold a session's outbox (default 30 s). */
  leaseMs?: number;
  /** Bound on one POST (default 5 s). */
  timeoutMs?: number;
  /** An event is given up on this long after it was recorded (default 24 h). */
  giveUpMs?: number;
  /** Events delivered per lease before the session goes back in the schedule (default 5). */
  perLease?: number;
  /** Sessions taken per shard and pass (default 20). */
  batch?: number;
  /** How often the backlog is held to its cap (default 10 s). */
  backlogCheckMs?: number;
}

/** Deliveries back off from 5 s, doubling to an hour, jittered (base/backoff.ts). */
const BACKOFF: BackoffShape = { firstMs: 5000, maxMs: 3600 * 1000 };
/** Events dead-lettered in one go under one lease, at most (the rest wait for the next). */
const SHED_PER_LEASE = 100;

const shards = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

/** When an outbox entry was recorded; entries of 0.1 do not say, and count as the oldest. */
const recordedAt = (raw: string): number => (JSON.parse(raw) as OutboxEntry).at ?? 0;

/** The member of `times` with the earliest time. */
const earliest = (times: ReadonlyMap<string, number>): string =>
  [...times].reduce((first, each) => (each[1] < first[1] ? each : first))[0];

export function createDelivery(options: DeliveryOptions) {
  const { store, log, now } = options;
  const limits = options.limits ?? DEFAULT_EVENT_LIMITS;
  const random = options.random ?? Math.random;
  const leaseMs = options.leaseMs ?? 30_000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const giveUpMs = options.giveUpMs ?? 24 * 3600 * 1000;
  const perLease = options.perLease ?? 5;
  const batch = options.batch ?? 20;
  const backlogCheckMs = options.backlogCheckMs ?? 10_000;
  const leases = createLeases(store);
  const webhook = createWebhook({ ...options, timeoutMs });
  const counters: DeliveryCounters = {
    delivered: 0,
    failedAttempts: 0,
    deadLettered: { expired: 0, outbox_full: 0, backlog_full: 0 },
    deadLettersDropped: 0,
  };

  const heads = createOutboxHeads({ store, now, log, limits, counters });
  const { attemptsOf, popped, deadLetter } = heads;

  /**
   * The outbox's head, tried once; false when the session must wait (back-off). Its window is its
   * own, from when it was recorded: an attempt that fails after it has ended is the last, and the
   * event is dead-lettered (so an event that waited its whole window behind another still gets
   * one attempt).
   */
  async function deliverHead(sid: string, raw: string): Promise<boolean> {
    const event = JSON.parse(raw) as OutboxEntry;
    const outcome = await webhook.post(event);
    if (outcome.ok) {
      if (await popped(sid, raw)) counters.delivered++;
      log.info({ event: event.id, type: event.type }, 'event delivered');
      return true;
    }
    counters.failedAttempts++;
    const previous = await attemptsOf(sid, event.id);
    const count = (previous?.count ?? 0) + 1;
    const first = previous?.first ?? now();
    const windowLeft = (event.at ?? first) + giveUpMs - now();
    if (windowLeft <= 0) {
      await deadLetter(sid, raw, 'expired', outcome.outcome);
      return true;
    }
    // Tried again after the back-off, or when the window ends if that comes first.
    const wait = Math.max(
      1000,
      Math.min(outcome.retryAfterMs ?? backoffMs(count, BACKOFF, random()), windowLeft),
    );
    const attempts: Attempts = {
      id: event.id,
      count,
      first,
      outcome: outcome.outcome,
      next: now() + wait,
    };
    await store.set(keys.outboxAttempts(sid), JSON.stringify(attempts), OUTBOX_RETENTION_MS);
    await Promise.all([
      // Kept alive while delivery is pending: a time to live never takes an event.
      store.expire(keys.outbox(sid), OUTBOX_RETENTION_MS),
      store.schedulePut(keys.eventsDue(eventShard(sid)), sid, now() + wait, {
        keepMs: OUTBOX_RETENTION_MS,
      }),
    ]);
    log.warn(
      {
        event: event.id,
        type: event.type,
        attempt: attempts.count,
        outcome: outcome.outcome,
        wait,
      },
      'event not delivered; trying again later',
    );
    return false;
  }

  /** `work` under the session's lease; nothing when another instance holds it. */
  async function leased(sid: string, work: () => Promise<void>): Promise<void> {
    const lease = await leases.take(keys.outboxLease(sid), leaseMs);
    if (!lease) return;
    try {
      await work();
    } finally {
      await leases.release(lease);
    }
  }

  /** Dead-letters the oldest events past the session's cap (under its lease). */
  async function trimmed(sid: string): Promise<void> {
    for (let n = 0; n < SHED_PER_LEASE; n++) {
      if ((await store.listLength(keys.outbox(sid))) <= outboxCap(sid, limits)) return;
      const head = await store.listHead(keys.outbox(sid));
      if (head === null) return;
      await deadLetter(sid, head, 'outbox_full', undefined);
    }
  }

  /**
   * Whether a woken session's head is waiting out its back-off: then it is left to the schedule,
   * put back at the attempt's time (a failover may have lost the entry), so that events recorded
   * while a receiver is down do not each spend an attempt and double the wait.
   */
  async function backingOff(sid: string, head: string): Promise<boolean> {
    const attempts = await attemptsOf(sid, (JSON.parse(head) as OutboxEntry).id);
    if (attempts?.next === undefined || attempts.next <= now()) return false;
    await store.schedulePut(keys.eventsDue(eventShard(sid)), sid, attempts.next, {
      keepMs: OUTBOX_RETENTION_MS,
    });
    return true;
  }

  /** Up to `perLease` attempts at a session's events, under its lease; `woken`: by a new event. */
  async function drain(sid: string, woken = false): Promise<void> {
    const due = keys.eventsDue(eventShard(sid));
    await leased(sid, async () => {
      await trimmed(sid);
      for (let n = 0; n < perLease; n++) {
        const head = await store.listHead(keys.outbox(sid));
        if (woken && n === 0 && head !== null && (await backingOff(sid, head))) return;
        if (head === null) {
          // Only if due: an entry put ahead by a recording under way (scheduleRecording) stays, so
          // that its event, written after this read, is delivered even if its instance stops.
          await store.scheduleRemove(due, sid, { dueBy: now() });
          // An event recorded between the read and the removal scheduled nothing (its session
          // was still there): look again after the removal.
          if ((await store.listLength(keys.outbox(sid))) > 0)
            await store.schedulePut(due, sid, now(), { keepMs: OUTBOX_RETENTION_MS });
          return;
        }
        if (!(await deliverHead(sid, head))) return;
      }
      await store.schedulePut(due, sid, now(), { onlyIfLater: true, keepMs: OUTBOX_RETENTION_MS });
    });
  }

  /** Events waiting in every outbox (the shards' counts; never below 0). */
  async function waiting(): Promise<number> {
    const counts = await Promise.all(
      shards.map((shard) => store.get(keys.eventsBacklog(shard)).then(Number)),
    );
    return Math.max(
      0,
      counts.reduce((sum, count) => sum + count, 0),
    );
  }

  let backlogCheckedAt = -Infinity;

  /**
   * Over the backlog's cap: the oldest waiting events, whatever their shard, are dead-lettered
   * until the backlog is back at the cap. Each shard offers the first `batch` sessions of its
   * schedule; their heads are merged by when they were recorded, and the session with the oldest
   * head gives up events, under its lease, while its head is still the oldest.
   */
  async function heldToCap(): Promise<void> {
    if (now() - backlogCheckedAt < backlogCheckMs) return;
    backlogCheckedAt = now();
    let excess = (await waiting()) - limits.backlog;
    if (excess <= 0) return;
    const heads = await candidates();
    while (excess > 0 && heads.size > 0) {
      const sid = earliest(heads);
      heads.delete(sid);
      const next = Math.min(...heads.values());
      await leased(sid, async () => {
        const oldest = (head: string | null): head is string =>
          head !== null && recordedAt(head) <= next;
        let head = await store.listHead(keys.outbox(sid));
        for (let n = 0; n < SHED_PER_LEASE && excess > 0 && oldest(head); n++) {
          await deadLetter(sid, head, 'backlog_full', undefined);
          excess--;
          head = await store.listHead(keys.outbox(sid));
        }
        // Its head is no longer the oldest, or this lease shed its most: back with the others.
        if (head !== null) heads.set(sid, recordedAt(head));
      });
    }
  }

  /** The first `batch` sessions of each shard's schedule, with when their heads were recorded. */
  async function candidates(): Promise<Map<string, number>> {
    const sessions = await Promise.all(
      shards.map((shard) => store.scheduleDue(keys.eventsDue(shard), Infinity, batch)),
    );
    const heads = await Promise.all(
      sessions.flat().map(async (sid) => [sid, await store.listHead(keys.outbox(sid))] as const),
    );
    return new Map(
      heads.flatMap(([sid, head]) => (head === null ? [] : [[sid, recordedAt(head)] as const])),
    );
  }

  let running: Promise<number> | null = null;
  let again = false;

  /** One pass over the sessions due now, shard by shard; answers how many sessions it took. */
  async function pass(): Promise<number> {
    await heldToCap();
    const due = await Promise.all(
      shards.map((shard) => store.scheduleDue(keys.eventsDue(shard), now(), batch)),
    );
    await Promise.all(due.flat().map((sid) => drain(sid)));
    return due.flat().length;
  }

  /** Passes until nothing more is due (single flight: a call during a pass asks for one more). */
  function runOnce(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let taken = 0;
      do {
        again = false;
        try {
          taken += await pass();
        } catch (error) {
          if (!(error instanceof StoreUnavailableError)) throw error;
          log.warn({ err: error }, 'event delivery paused: the store is unavailable');
          return taken;
        }
      } while (again);
      return taken;
    })().finally(() => {
      running = null;
    });
    return running;
  }

  /** `work`, whose store going away pauses delivery (it resumes at the next poll). */
  const paused = (work: Promise<unknown>): Promise<unknown> =>
    work.catch((error: unknown) => {
      if (!(error instanceof StoreUnavailableError)) throw error;
      log.warn({ err: error }, 'event delivery paused: the store is unavailable');
    });

  const logged = (work: Promise<unknown>): void =>
    void work.catch((error: unknown) => log.error({ err: error }, 'event delivery failed'));

  let timer: NodeJS.Timeout | undefined;
  return {
    counters,
    limits,
    runOnce,
    /** Polls every `pollMs` (the schedule is shared: any instance picks up any session). */
    start(pollMs = 1000): void {
      timer ??= setInterval(() => logged(runOnce()), pollMs).unref();
    },
    /**
     * Deliver now what this instance just recorded: session `sid`'s outbox, whether the schedule
     * names it or not (on a Cluster the schedule's shard lives on another master than the outbox,
     * and a failover there may have lost both of its entries), and whatever else is due.
     */
    wake(sid?: string): void {
      if (sid !== undefined) logged(paused(drain(sid, true)));
      logged(runOnce());
    },
    /** The session's outbox is over its cap: its oldest events go to the dead letters now. */
    async trim(sid: string): Promise<void> {
      await leased(sid, () => trimmed(sid));
    },
    /** Stops polling and waits for the pass under way (its leases are released). */
    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
    /** What waits in the store, for the metrics: sessions due, events waiting, dead letters. */
    async backlog(): Promise<{ sessions: number; events: number; deadLetters: number }> {
      const sum = async (size: (shard: number) => Promise<number>) =>
        (await Promise.all(shards.map(size))).reduce((total, each) => total + each, 0);
      return {
        sessions: await sum((shard) => store.scheduleSize(keys.eventsDue(shard))),
        events: await waiting(),
        deadLetters: await sum((shard) => store.logSize(keys.deadLetters(shard))),
      };
    },
  };
}
export type Delivery = ReturnType<typeof createDelivery>;
