import type { DisconnectedReason } from '@baton/shared';
import type { OutboxWrite } from '../store/types.ts';

/**
 * Events for the integrator's systems (docs/events.md), shaped and signed by the Standard
 * Webhooks specification. Each is recorded in the same store step as the change it reports
 * (Store.setVersioned / delRecording with an OutboxWrite) by the sink ops/events.ts implements. They carry ids, origins and reasons: never a token, a code, a
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
    }
  | {
      /**
       * An operator's action through the admin API or CLI (admin/): who, what, on what. Recorded
       * in the admin outbox (ops/events.ts ADMIN_OUTBOX), not a session's: the target names
       * connection ids, session references, licences, event ids, never a session id.
       */
      type: 'admin.action';
      actor: { name: string; role: 'viewer' | 'operator' };
      action: string;
      target: Record<string, string | number>;
    };

export type EventType = BrokerEvent['type'];

/**
 * Where events go. `record` (before the change) gives the entry to write with the change (null:
 * events are off); `recorded` is called once that write landed with its entry, so that it is
 * counted and its session's outbox delivered. A change that did not happen (a versioned write
 * that lost, a deletion that found nothing) records nothing and calls nothing.
 */
export interface EventSink {
  record(sid: string, event: BrokerEvent): Promise<OutboxWrite | null>;
  recorded(sid: string): Promise<void>;
}

export const noEvents: EventSink = { record: async () => null, recorded: async () => {} };

/** A connection as events name it: its id and its license API's origin (never a token). */
export function eventConnection(record: { id: string; apiUrl: string }): EventConnection {
  return { id: record.id, api_origin: new URL(record.apiUrl).origin };
}
