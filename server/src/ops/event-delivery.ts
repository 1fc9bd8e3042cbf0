import type { Logger } from 'pino';
import { backoffMs, type BackoffShape } from '../base/backoff.ts';
import { retryAfterMs } from '../base/retry-after.ts';
import { EVENT_SHARDS, eventShard, keys } from '../store/keys.ts';
import { createLeases } from '../store/lease.ts';
import { StoreUnavailableError, type Store } from '../store/types.ts';
import {
  DEFAULT_EVENT_LIMITS,
  OUTBOX_RETENTION_MS,
  sessionRef,
  signatures,
  type EventLimits,
  type OutboxEntry,
} from './events.ts';

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
export type DeadLetterReason = 'expired' | 'outbox_full' | 'backlog_full';

export interface DeliveryCounters {
  delivered: number;
  failedAttempts: number;
  deadLettered: Record<DeadLetterReason, number>;
  /** Dead letters dropped to keep the dead letters within their age and count. */
  deadLettersDropped: number;
}

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

interface Attempts {
  id: string;
  count: number;
  first: number;
  /** What the last attempt got, for a dead letter. */
  outcome?: string;
}

type Outcome = { ok: true } | { ok: false; outcome: string; retryAfterMs?: number | undefined };

const shards = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

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
  const counters: DeliveryCounters = {
    delivered: 0,
    failedAttempts: 0,
    deadLettered: { expired: 0, outbox_full: 0, backlog_full: 0 },
    deadLettersDropped: 0,
  };
  const deadLettersPerShard = Math.max(1, Math.ceil(limits.deadLetters / EVENT_SHARDS));

  async function post(event: OutboxEntry): Promise<Outcome> {
    const timestamp = String(Math.floor(now() / 1000));
    try {
      const response = await options.fetch(options.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Baton-Webhooks',
          'webhook-id': event.id,
          'webhook-timestamp': timestamp,
          'webhook-signature': signatures(options.secrets, event.id, timestamp, event.body),
        },
        body: event.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel();
      if (response.ok) return { ok: true };
      return {
        ok: false,
        outcome: `status ${response.status}`,
        retryAfterMs: retryAfterMs(response.headers.get('retry-after'), now()),
      };
    } catch (error) {
      return { ok: false, outcome: (error as Error).name };
    }
  }

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
      session_ref: sessionRef(sid),
      reason,
      attempts: attempts?.count ?? 0,
      ...(event.at === undefined ? {} : { recorded_at: new Date(event.at).toISOString() }),
      ...(attempts ? { first_attempt_at: new Date(attempts.first).toISOString() } : {}),
      dead_at: new Date(at).toISOString(),
      last_outcome: outcome ?? attempts?.outcome ?? 'not attempted',
    });
    counters.deadLettersDropped += await store.logAdd(
      keys.deadLetters(eventShard(sid)),
      letter,
      at,
      {
        maxCount: deadLettersPerShard,
        minAtMs: at - limits.deadLetterRetentionMs,
        ttlMs: limits.deadLetterRetentionMs,
      },
    );
    if (!(await popped(sid, raw))) return;
    counters.deadLettered[reason]++;
    log.error(
      { event: event.id, type: event.type, reason, attempts: attempts?.count ?? 0 },
      'event not delivered: moved to the dead letters',
    );
  }

  /**
   * The outbox's head, tried once; false when the session must wait (back-off). Its window is its
   * own, from when it was recorded: an attempt that fails after it has ended is the last, and the
   * event is dead-lettered (so an event that waited its whole window behind another still gets
   * one attempt).
   */
  async function deliverHead(sid: string, raw: string): Promise<boolean> {
    const event = JSON.parse(raw) as OutboxEntry;
    const outcome = await post(event);
    if (outcome.ok) {
      if (await popped(sid, raw)) counters.delivered++;
      log.info({ event: event.id, type: event.type }, 'event delivered');
      return true;
    }
    counters.failedAttempts++;
    const previous = await attemptsOf(sid, event.id);
    const attempts: Attempts = {
      id: event.id,
      count: (previous?.count ?? 0) + 1,
      first: previous?.first ?? now(),
      outcome: outcome.outcome,
    };
    await store.set(keys.outboxAttempts(sid), JSON.stringify(attempts), OUTBOX_RETENTION_MS);
    const windowLeft = (event.at ?? attempts.first) + giveUpMs - now();
    if (windowLeft <= 0) {
      await deadLetter(sid, raw, 'expired', outcome.outcome);
      return true;
    }
    // Tried again after the back-off, or when the window ends if that comes first.
    const wait = Math.max(
      1000,
      Math.min(outcome.retryAfterMs ?? backoffMs(attempts.count, BACKOFF, random()), windowLeft),
    );
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
      if ((await store.listLength(keys.outbox(sid))) <= limits.perSession) return;
      const head = await store.listHead(keys.outbox(sid));
      if (head === null) return;
      await deadLetter(sid, head, 'outbox_full', undefined);
    }
  }

  /** Up to `perLease` attempts at one session's events, under its lease. */
  async function drain(sid: string): Promise<void> {
    const due = keys.eventsDue(eventShard(sid));
    await leased(sid, async () => {
      await trimmed(sid);
      for (let n = 0; n < perLease; n++) {
        const head = await store.listHead(keys.outbox(sid));
        if (head === null) {
          await store.scheduleRemove(due, sid);
          // An event recorded between the read and the removal scheduled nothing (its session
          // was still there): look again after the removal.
          if ((await store.listLength(keys.outbox(sid))) > 0)
            await store.schedulePut(due, sid, now(), { keepMs: OUTBOX_RETENTION_MS });
          return;
        }
        if (!(await deliverHead(sid, head))) return;
      }
      await store.schedulePut(due, sid, now(), { keepMs: OUTBOX_RETENTION_MS });
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
   * Over the backlog's cap: the sessions first in the schedule (those waiting longest) give up
   * their oldest events, as dead letters, until the backlog is back at the cap.
   */
  async function heldToCap(): Promise<void> {
    if (now() - backlogCheckedAt < backlogCheckMs) return;
    backlogCheckedAt = now();
    let excess = (await waiting()) - limits.backlog;
    for (const shard of shards) {
      if (excess <= 0) return;
      for (const sid of await store.scheduleDue(keys.eventsDue(shard), Infinity, batch)) {
        if (excess <= 0) return;
        await leased(sid, async () => {
          for (let n = 0; n < SHED_PER_LEASE && excess > 0; n++) {
            const head = await store.listHead(keys.outbox(sid));
            if (head === null) return;
            await deadLetter(sid, head, 'backlog_full', undefined);
            excess--;
          }
        });
      }
    }
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
    /** Deliver now what this instance just recorded. */
    wake(): void {
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
