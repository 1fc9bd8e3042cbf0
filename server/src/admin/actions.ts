import type { EventSink } from '../connections/events.ts';
import { ADMIN_OUTBOX } from '../ops/events.ts';
import type { Store } from '../store/types.ts';
import type { Actor } from './types.ts';

/** What an operator did, as its `admin.action` event names it. */
export type AdminAction =
  | 'disconnect'
  | 'end_session'
  | 'end_sessions_of_licence'
  | 'redeliver'
  | 'discard'
  | 'start_reencrypt'
  | 'start_census'
  | 'sweep_events';

/**
 * Records an operator's action as an `admin.action` event (when events are on) in the admin outbox,
 * delivered like a session's events. Recorded once the action is done: an instance that stops in
 * between did it without its event, never an event for what was not done. `target` names ids,
 * session references and licences: never a session id or a token.
 */
export function createActionEvents(deps: { store: Store; events: EventSink }) {
  const { store, events } = deps;
  return async function recordAction(
    actor: Actor,
    action: AdminAction,
    target: Record<string, string | number>,
  ): Promise<void> {
    const write = await events.record(ADMIN_OUTBOX, {
      type: 'admin.action',
      actor: { name: actor.name, role: actor.role },
      action,
      target,
    });
    if (!write) return;
    await store.listPush(write.key, write.entry, write.ttlMs);
    await events.recorded(ADMIN_OUTBOX);
  };
}
export type RecordAction = ReturnType<typeof createActionEvents>;
