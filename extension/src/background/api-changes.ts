import { API_CHANGES_PORT, apiError, type ApiChange, type ApiChangesMessage } from '../api.ts';
import { originAllowed } from '../api-origins.ts';
import type { View, ViewStore } from '../state/view.ts';
import type { ApiListenerOptions } from './api-listener.ts';
import { callerOf, type MessageSender } from './senders.ts';

/**
 * Change notifications of the integrator's API (api.ts, `batonApi.onChange`): what each write of
 * the view changed for an API caller (a licence connected, disconnected or removed; signed out),
 * published to the pages that listen through a port. Every change the popup can see goes through
 * the view, so none is missed, whichever part made it (the flow, a refresh, the popup's actions,
 * the broker ending the session, the organisation's policy).
 */

/** The changes from `before` to `after`: ids, status and origins only. */
export function viewChanges(before: View, after: View): ApiChange[] {
  // The licences go with the session: one notification says it all.
  if (before.signedIn && !after.signedIn) return [{ kind: 'signed_out' }];
  const changes: ApiChange[] = [];
  for (const c of before.connections)
    if (!after.connections.some((a) => a.id === c.id))
      changes.push({ kind: 'removed', connectionId: c.id, apiOrigin: c.apiOrigin });
  for (const c of after.connections) {
    if (before.connections.find((b) => b.id === c.id)?.status === c.status) continue;
    changes.push(
      c.status === 'connected'
        ? { kind: 'connected', connectionId: c.id, apiOrigin: c.apiOrigin }
        : {
            kind: 'disconnected',
            connectionId: c.id,
            apiOrigin: c.apiOrigin,
            reason: c.disconnectedReason,
          },
    );
  }
  return changes;
}

export interface ChangeFeed {
  /** Calls `listener` with each change from now on; returns the function that stops it. */
  subscribe(listener: (change: ApiChange) => void): () => void;
}

export function createChangeFeed(): ChangeFeed & {
  publish(changes: readonly ApiChange[]): void;
} {
  const listeners = new Set<(change: ApiChange) => void>();
  return {
    subscribe(listener) {
      const own = (change: ApiChange) => listener(change);
      listeners.add(own);
      return () => void listeners.delete(own);
    },
    publish(changes) {
      for (const change of changes)
        for (const listener of [...listeners]) {
          try {
            listener(change);
          } catch {
            // One page gone wrong does not keep the change from the others.
          }
        }
    },
  };
}

/** `view`, publishing what each of its writes changed once it is written. */
export function publishingChanges(
  view: ViewStore,
  publish: (changes: readonly ApiChange[]) => void,
): ViewStore {
  return {
    read: () => view.read(),
    async update(change) {
      let before = null as View | null;
      const after = await view.update((v) => {
        before = v;
        return change(v);
      });
      if (before !== null) publish(viewChanges(before, after));
      return after;
    },
  };
}

/** What the listener needs of a `runtime.Port` the background is given. */
export interface ChangesPort {
  readonly name: string;
  readonly sender?: MessageSender | undefined;
  postMessage(message: ApiChangesMessage): void;
  disconnect(): void;
  readonly onDisconnect: { addListener(listener: () => void): void };
}

/**
 * The background's `runtime.onConnect` listener for the changes port: the same callers as the
 * API's messages (api-listener.ts). An extension page, or a content script on a listed origin, is
 * told `api.listening`, then each change until its port closes. A content script elsewhere is
 * told `api.refused` (origin_not_allowed) and disconnected; any other sender is disconnected
 * without a word. A port of another name is left alone.
 */
export function createApiChangesListener(feed: ChangeFeed, options: ApiListenerOptions) {
  const log = options.log ?? (() => undefined);
  return (port: ChangesPort): void => {
    if (port.name !== API_CHANGES_PORT) return;
    const caller = port.sender === undefined ? null : callerOf(port.sender, options.self);
    if (caller === null) {
      port.disconnect();
      return;
    }
    if (caller.kind === 'content-script' && !originAllowed(caller.origin, options.origins)) {
      log('api.refused', { reason: 'origin_not_allowed' });
      port.postMessage({ type: 'api.refused', error: apiError('origin_not_allowed') });
      port.disconnect();
      return;
    }
    const unsubscribe = feed.subscribe((change) => {
      try {
        port.postMessage({ type: 'api.change', change });
      } catch {
        unsubscribe(); // the page went away between its port closing and this change
      }
    });
    port.onDisconnect.addListener(unsubscribe);
    port.postMessage({ type: 'api.listening' });
  };
}
