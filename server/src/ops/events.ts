import type { DisconnectedReason } from '@baton/shared';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { keys } from '../store/keys.ts';
import type { OutboxWrite, Store } from '../store/types.ts';

/**
 * Events for the integrator's systems (docs/events.md), shaped and signed by the Standard
 * Webhooks specification. Each is recorded in the session's outbox in the same store step as the
 * change it reports (Store.setVersioned / delRecording with an OutboxWrite), then delivered from
 * there (ops/event-delivery.ts). They carry ids, origins and reasons: never a token, a code, a
 * secret or a session handle.
 */
export interface EventConnection {
  id: string;
  api_origin: string;
}

export type BrokerEvent =
  | { type: 'connection.created'; connection: EventConnection }
  | { type: 'connection.reconnected'; connection: EventConnection }
  | {
      type: 'connection.disconnected';
      connection: EventConnection & { reason: DisconnectedReason };
    }
  | { type: 'connection.removed'; connection: EventConnection }
  | {
      type: 'session.ended';
      /** signed_out: the user signed out; revoked: an operator dropped it (admin CLI). */
      reason: 'signed_out' | 'revoked';
      /** The connections that ended with it. */
      connections: string[];
    };

export type EventType = BrokerEvent['type'];

/** As stored in an outbox: the body is serialised once, so every attempt signs the same bytes. */
export interface OutboxEntry {
  id: string;
  type: EventType;
  body: string;
}

/**
 * Where events go. `record` gives the entry to write with the change (null: events are off);
 * `recorded` is called once that write landed, so the session's outbox gets delivered.
 */
export interface EventSink {
  record(sid: string, event: BrokerEvent): OutboxWrite | null;
  recorded(sid: string): Promise<void>;
}

export const noEvents: EventSink = { record: () => null, recorded: async () => {} };

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
    event.type === 'session.ended'
      ? { session: { ...session, reason: event.reason }, connections: event.connections }
      : { session, connection: event.connection };
  return JSON.stringify({ type: event.type, timestamp: new Date(at).toISOString(), data });
}

/** How long an outbox outlives its last event: past the delivery window, with a day to spare. */
export const OUTBOX_RETENTION_MS = 48 * 3600 * 1000;

export function createOutbox(options: {
  store: Store;
  now: () => number;
  /** Called after an event landed: this instance delivers it without waiting for its next poll. */
  wake?: () => void;
}): EventSink {
  const { store, now } = options;
  return {
    record(sid, event) {
      const entry: OutboxEntry = {
        id: `msg_${randomBytes(16).toString('base64url')}`,
        type: event.type,
        body: payload(sid, event, now()),
      };
      return { key: keys.outbox(sid), entry: JSON.stringify(entry), ttlMs: OUTBOX_RETENTION_MS };
    },
    async recorded(sid) {
      // An outbox already waiting (in back-off) keeps its time: order before speed.
      await store.schedulePut(keys.eventsDue, sid, now(), { onlyIfAbsent: true });
      options.wake?.();
    },
  };
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
