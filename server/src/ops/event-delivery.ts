import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { keys } from '../store/keys.ts';
import { StoreUnavailableError, type Store } from '../store/types.ts';
import { OUTBOX_RETENTION_MS, sessionRef, signatures, type OutboxEntry } from './events.ts';

/**
 * Delivers the outboxes (ops/events.ts) to EVENTS_WEBHOOK_URL, from every instance:
 *
 * - A session's outbox is delivered by one instance at a time (a lease in the store), head first,
 *   and its head leaves only once answered 2xx: events of a session, and so of each of its
 *   connections, arrive in order. Delivery is at least once: an instance killed between the
 *   receiver's answer and the pop sends that event again, with the same `webhook-id`.
 * - A failed attempt (no answer, a timeout, any status but 2xx) is tried again after an
 *   exponential back-off with jitter (5 s doubling to 1 h), or after the receiver's `Retry-After`;
 *   an event still undelivered 24 h after its first attempt goes to the dead letters (the admin
 *   CLI lists them) and the next one is tried.
 * - Sessions due for delivery sit in a schedule on the store, on this process's clock (injected:
 *   a test runs a simulated day in milliseconds).
 */
export interface DeliveryCounters {
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
}

export interface DeliveryOptions {
  store: Store;
  url: string;
  secrets: readonly Buffer[];
  fetch: typeof globalThis.fetch;
  now: () => number;
  log: Logger;
  /** In [0, 1): the back-off's jitter (default Math.random). */
  random?: () => number;
  /** How long an instance may hold a session's outbox (default 30 s). */
  leaseMs?: number;
  /** Bound on one POST (default 5 s). */
  timeoutMs?: number;
  /** An event is given up on this long after its first attempt (default 24 h). */
  giveUpMs?: number;
  /** Events delivered per lease before the session goes back in the schedule (default 5). */
  perLease?: number;
  /** Sessions taken per pass (default 20). */
  batch?: number;
  /**
   * Every session that has an outbox (a SCAN of Redis). An instance that stopped between writing
   * an event and scheduling its session left an outbox nobody is due to deliver: the sweep, at
   * start and every `sweepMs` (default 10 min), schedules every outbox not already scheduled.
   */
  outboxes?: () => AsyncIterable<string>;
  sweepMs?: number;
}

export const BACKOFF_FIRST_MS = 5000;
export const BACKOFF_MAX_MS = 3600 * 1000;
const DEAD_LETTER_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** The wait after the `attempt`-th failure: 5 s doubling to 1 h, then between half and all of it. */
export function backoffMs(attempt: number, random: number): number {
  const full = Math.min(BACKOFF_FIRST_MS * 2 ** (attempt - 1), BACKOFF_MAX_MS);
  return Math.round(full * (0.5 + random / 2));
}

/** `Retry-After` in seconds or as an HTTP date, kept between 1 s and a day; else undefined. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - now;
  if (!Number.isFinite(seconds)) return undefined;
  return Math.min(Math.max(seconds, 1000), 24 * 3600 * 1000);
}

interface Attempts {
  id: string;
  count: number;
  first: number;
}

type Outcome = { ok: true } | { ok: false; outcome: string; retryAfterMs?: number | undefined };

export function createDelivery(options: DeliveryOptions) {
  const { store, log, now } = options;
  const random = options.random ?? Math.random;
  const leaseMs = options.leaseMs ?? 30_000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const giveUpMs = options.giveUpMs ?? 24 * 3600 * 1000;
  const perLease = options.perLease ?? 5;
  const batch = options.batch ?? 20;
  const owner = randomBytes(8).toString('hex');
  const counters: DeliveryCounters = { delivered: 0, failedAttempts: 0, deadLettered: 0 };

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

  /** The outbox's head, tried once; false when the session must wait (back-off). */
  async function deliverHead(sid: string, raw: string): Promise<boolean> {
    const outbox = keys.outbox(sid);
    const event = JSON.parse(raw) as OutboxEntry;
    const outcome = await post(event);
    if (outcome.ok) {
      await store.listPopIfHead(outbox, raw);
      await store.del(keys.outboxAttempts(sid));
      counters.delivered++;
      log.info({ event: event.id, type: event.type }, 'event delivered');
      return true;
    }
    counters.failedAttempts++;
    const stored = await store.get(keys.outboxAttempts(sid));
    const previous = stored === null ? null : (JSON.parse(stored) as Attempts);
    const attempts: Attempts =
      previous?.id === event.id
        ? { ...previous, count: previous.count + 1 }
        : { id: event.id, count: 1, first: now() };
    if (now() - attempts.first >= giveUpMs) {
      await store.listPush(
        keys.deadLetters,
        JSON.stringify({
          ...event,
          session_ref: sessionRef(sid),
          attempts: attempts.count,
          first_attempt_at: new Date(attempts.first).toISOString(),
          dead_at: new Date(now()).toISOString(),
          last_outcome: outcome.outcome,
        }),
        DEAD_LETTER_RETENTION_MS,
      );
      await store.listPopIfHead(outbox, raw);
      await store.del(keys.outboxAttempts(sid));
      counters.deadLettered++;
      log.error(
        { event: event.id, type: event.type, attempts: attempts.count, outcome: outcome.outcome },
        'event not delivered in time: moved to the dead letters',
      );
      return true;
    }
    await store.set(keys.outboxAttempts(sid), JSON.stringify(attempts), OUTBOX_RETENTION_MS);
    const wait = outcome.retryAfterMs ?? backoffMs(attempts.count, random());
    await store.schedulePut(keys.eventsDue, sid, now() + wait);
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

  /** Up to `perLease` events of one session, under its lease. */
  async function drain(sid: string): Promise<void> {
    const lease = keys.outboxLease(sid);
    const token = `${owner}:${randomBytes(6).toString('hex')}`;
    if (!(await store.setIfAbsent(lease, token, leaseMs))) return;
    try {
      for (let n = 0; n < perLease; n++) {
        const head = await store.listHead(keys.outbox(sid));
        if (head === null) {
          await store.scheduleRemove(keys.eventsDue, sid);
          // An event recorded between the read and the removal scheduled nothing (its session
          // was still there): look again after the removal.
          if ((await store.listLength(keys.outbox(sid))) > 0)
            await store.schedulePut(keys.eventsDue, sid, now());
          return;
        }
        if (!(await deliverHead(sid, head))) return;
      }
      await store.schedulePut(keys.eventsDue, sid, now());
    } finally {
      await store.deleteIfEquals(lease, token);
    }
  }

  let running: Promise<number> | null = null;
  let again = false;

  /** One pass over the sessions due now; answers how many sessions it took. */
  async function pass(): Promise<number> {
    const due = await store.scheduleDue(keys.eventsDue, now(), batch);
    await Promise.all(due.map((sid) => drain(sid)));
    return due.length;
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

  /** Schedules every outbox that is not (see DeliveryOptions.outboxes); answers how many it saw. */
  async function sweep(): Promise<number> {
    if (!options.outboxes) return 0;
    let seen = 0;
    for await (const sid of options.outboxes()) {
      seen++;
      await store.schedulePut(keys.eventsDue, sid, now(), { onlyIfAbsent: true });
    }
    return seen;
  }
  const sweepLogged = () =>
    void sweep().catch((error: unknown) => log.warn({ err: error }, 'outbox sweep failed'));

  let timer: NodeJS.Timeout | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  return {
    counters,
    runOnce,
    sweep,
    /** Polls every `pollMs` (the schedule is shared: any instance picks up any session). */
    start(pollMs = 1000): void {
      if (options.outboxes && !sweeper) {
        sweepLogged();
        sweeper = setInterval(sweepLogged, options.sweepMs ?? 10 * 60_000).unref();
      }
      timer ??= setInterval(
        () =>
          void runOnce().catch((error: unknown) =>
            log.error({ err: error }, 'event delivery failed'),
          ),
        pollMs,
      ).unref();
    },
    /** Deliver now what this instance just recorded. */
    wake(): void {
      void runOnce().catch((error: unknown) => log.error({ err: error }, 'event delivery failed'));
    },
    /** Stops polling and waits for the pass under way (its leases are released). */
    async stop(): Promise<void> {
      clearInterval(timer);
      clearInterval(sweeper);
      timer = sweeper = undefined;
      await running?.catch(() => undefined);
    },
    /** What waits in the store, for the metrics: sessions with events due, dead letters. */
    async backlog(): Promise<{ sessions: number; deadLetters: number }> {
      return {
        sessions: await store.scheduleSize(keys.eventsDue),
        deadLetters: await store.listLength(keys.deadLetters),
      };
    },
  };
}
export type Delivery = ReturnType<typeof createDelivery>;
