import type { Connection } from '@baton/shared';
import type { ConnectionView } from '../state/view.ts';

export function toConnectionView(c: Connection, user: ConnectionView['user']): ConnectionView {
  return {
    id: c.id,
    status: c.status,
    apiOrigin: c.api_origin,
    connectedAt: c.connected_at,
    accessExpiresAt: c.access_expires_at,
    disconnectedReason: c.status === 'disconnected' ? (c.disconnected_reason ?? null) : null,
    user,
  };
}

/** Keeps the last user record of each connection, so that a card never goes blank. */
export function mergeConnections(
  previous: readonly ConnectionView[],
  list: readonly Connection[],
): ConnectionView[] {
  return list.map((c) => {
    const before = previous.find((p) => p.id === c.id);
    const record = before?.user.record;
    // Connected: (re)loaded by the refresh. Disconnected: not fetched (the broker would answer
    // reauthorization_required), but the last record still says which license it was.
    const user: ConnectionView['user'] =
      c.status === 'connected'
        ? { status: 'loading', ...(record !== undefined && { record }) }
        : {
            status: 'failed',
            problem: { code: 'reauthorization_required' },
            ...(record !== undefined && { record }),
          };
    return toConnectionView(c, user);
  });
}

/** The list with `connection` added, or put in place of the one with its id. */
export function upsertConnection(
  previous: readonly ConnectionView[],
  connection: Connection,
): ConnectionView[] {
  const merged = mergeConnections(previous, [connection])[0];
  if (merged === undefined) return [...previous];
  return previous.some((c) => c.id === connection.id)
    ? previous.map((c) => (c.id === connection.id ? merged : c))
    : [...previous, merged];
}
