/**
 * The events' outbox and their signing: each event of connections/events.ts is written to its
 * session's outbox in the same store step as the change it reports, shaped and signed as Standard
 * Webhooks says (docs/events.md), then delivered (ops/event-delivery.ts).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { DEFAULT_EVENT_LIMITS } from '../base/defaults.ts';
import { eventShard, keys } from '../store/keys.ts';
import type { BrokerEvent, EventSink, EventType } from '../connections/events.ts';
import type { Store } from '../store/types.ts';

/** As stored in an outbox: the body is serialised once, so every attempt signs the same bytes. */
export interface OutboxEntry {
  id: string;
  type: EventType;
  body: string;
  /** When it was recorded (ms): its delivery window runs from then. Absent in entries of 0.1. */
  at?: number;
  /**
   * The session's reference, on an event an operator redelivered through the admin outbox (its
   * session's own is not known from a dead letter): a dead letter again still names its session.
   */
  session_ref?: string;
}

/**
 * The outbox of what belongs to no session: operators' `admin.action` events, and dead letters
 * an operator redelivers (admin/). Its keys are a session's (`baton:{admin}:outbox`...), and it is
 * scheduled and delivered like any other; this id is no session id (those are 43 characters).
 */
export const ADMIN_OUTBOX = 'admin';

/**
 * How many events outbox `sid` holds before its oldest are dead-lettered (`outbox_full`): a
 * session's EVENTS_OUTBOX_MAX, but the admin outbox only the backlog's bound. It holds every
 * operator's actions and every redelivered dead letter, so a burst of redeliveries must not push
 * each other (or the actions that report them) back into the dead letters.
 */
export const outboxCap = (sid: string, limits: Pick<EventLimits, 'perSession' | 'backlog'>) =>
  sid === ADMIN_OUTBOX ? limits.backlog : limits.perSession;

/**
 * A session's reference in events: stable for the session's life and the same in every event of
 * it, derived one way from the session id so it cannot be turned back into anything usable.
 */
export function sessionRef(sid: string): string {
  return `ses_${createHash('sha256').update(`baton-event-ref:${sid}`).digest('base64url').slice(0, 22)}`;
}

/** The payload a receiver gets: `{ type, timestamp, data }`, as Standard Webhooks suggests. */
function payload(sid: string, event: BrokerEvent, at: number): string {
  const session = { ref: sessionRef(sid) };
  const data =
    event.type === 'admin.action'
      ? { actor: event.actor, action: event.action, target: event.target }
      : event.type === 'session.ended'
        ? { session: { ...session, reason: event.reason }, connections: event.connections }
        : { session, connection: event.connection };
  return JSON.stringify({ type: event.type, timestamp: new Date(at).toISOString(), data });
}

/**
 * How long an outbox (and its session's place in the schedule) lives after its last event or
 * delivery attempt: past the delivery window, with a day to spare. Every attempt renews it, so
 * whatever the window leaves is dead-lettered, never taken by a time to live.
 */
export const OUTBOX_RETENTION_MS = 48 * 3600 * 1000;

/**
 * How far ahead the write-ahead schedule puts a session whose event is being recorded: past the
 * time the change's write takes (its commands are bounded at a second each). A deliverer that
 * finds the outbox still empty before then leaves the entry (it is not due), so an instance that
 * stops between the write and `recorded` still leaves the event due.
 */
export const RECORDING_MS = 5_000;

/** The write-ahead entry: due once the recording is surely over, or later if it already was. */
export const scheduleRecording = (
  store: Store,
  now: () => number,
  sid: string,
  aheadMs = RECORDING_MS,
) =>
  store.schedulePut(keys.eventsDue(eventShard(sid)), sid, now() + aheadMs, {
    onlyIfLater: true,
    keepMs: OUTBOX_RETENTION_MS,
  });

/** The bounds on what waits for delivery (EVENTS_OUTBOX_MAX, EVENTS_BACKLOG_MAX...). */
export interface EventLimits {
  /** Events one session's outbox holds; past it, the oldest is dead-lettered (`outbox_full`). */
  perSession: number;
  /** Events waiting across every session; past it, the oldest are dead-lettered (`backlog_full`). */
  backlog: number;
  /**
   * Dead letters kept (the oldest go first), and for how long. One session keeps at most a tenth of
   * its shard's: past that, its dead letters are counted, not kept (ops/outbox-heads.ts).
   */
  deadLetters: number;
  deadLetterRetentionMs: number;
}

/**
 * The outbox: each event is written to its session's outbox in the same store step as the change
 * it reports. Before the change its session is put in the schedule (write-ahead), so that an
 * instance that stops right after the change leaves it due, not forgotten; after it, the event is
 * counted in the backlog, and an outbox past its cap is trimmed by the delivery (`onFull`).
 */
export function createOutbox(options: {
  store: Store;
  now: () => number;
  limits?: EventLimits;
  /**
   * Called after an event of session `sid` landed: this instance delivers it without waiting for
   * its next poll, or for the schedule to name it.
   */
  wake?: (sid: string) => void;
  /** The session's outbox holds more than its cap (outboxCap). */
  onFull?: (sid: string) => Promise<void>;
  /** How far ahead the write-ahead entry is put (RECORDING_MS; tests that poll at once: 0). */
  recordingMs?: number;
}): EventSink {
  const { store, now } = options;
  const limits = options.limits ?? DEFAULT_EVENT_LIMITS;
  // An outbox already waiting (in back-off) keeps its time: order before speed.
  const schedule = (sid: string) =>
    store.schedulePut(keys.eventsDue(eventShard(sid)), sid, now(), {
      onlyIfAbsent: true,
      keepMs: OUTBOX_RETENTION_MS,
    });
  return {
    async record(sid, event) {
      await scheduleRecording(store, now, sid, options.recordingMs);
      const at = now();
      const entry: OutboxEntry = {
        id: `msg_${randomBytes(16).toString('base64url')}`,
        type: event.type,
        body: payload(sid, event, at),
        at,
      };
      return { key: keys.outbox(sid), entry: JSON.stringify(entry), ttlMs: OUTBOX_RETENTION_MS };
    },
    async recorded(sid) {
      await Promise.all([
        schedule(sid),
        store.counterAdd(keys.eventsBacklog(eventShard(sid)), 1, OUTBOX_RETENTION_MS),
      ]);
      if ((await store.listLength(keys.outbox(sid))) > outboxCap(sid, limits))
        await options.onFull?.(sid);
      options.wake?.(sid);
    },
  };
}

/**
 * Puts `entry` (an event already recorded once: its id kept, so a receiver that had it dedupes)
 * at the end of outbox `sid` for delivery, as `record` and `recorded` do for a new one: scheduled
 * first, then written, then counted in the backlog.
 */
export async function enqueue(
  store: Store,
  now: () => number,
  sid: string,
  entry: OutboxEntry,
): Promise<void> {
  await scheduleRecording(store, now, sid);
  await store.listPush(keys.outbox(sid), JSON.stringify(entry), OUTBOX_RETENTION_MS);
  await store.counterAdd(keys.eventsBacklog(eventShard(sid)), 1, OUTBOX_RETENTION_MS);
}

/**
 * A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes. The key is the
 * decoded bytes, as every Standard Webhooks library reads it.
 */
export function parseWebhookSecret(secret: string): Buffer | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match?.[1]) return null;
  const key = Buffer.from(match[1], 'base64');
  return key.length >= 24 && key.length <= 64 ? key : null;
}

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256 over id.timestamp.body>` for each
 * secret, space-separated (several during a rotation: a receiver accepts any one it knows).
 */
export function signatures(
  secrets: readonly Buffer[],
  id: string,
  timestamp: string,
  body: string,
): string {
  return secrets
    .map(
      (key) =>
        `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`,
    )
    .join(' ');
}
