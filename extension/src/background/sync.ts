import type { Connection, DisconnectedReason } from '@baton/shared';
import { toProblem, type Problem } from '../problems.ts';
import type { PersistedState } from '../state/persisted.ts';
import type { ConnectionView, Notice, View } from '../state/view.ts';
import type { BrokerClient } from './broker-client.ts';
import { mergeConnections } from './connection-views.ts';
import type { BackgroundCore } from './core.ts';

/**
 * What the connection list and the session take from the core; the core's `refresh`, `endSession`
 * and `noteDisconnected` are this part's own.
 */
export type SyncCore = Pick<
  BackgroundCore,
  | 'state'
  | 'view'
  | 'now'
  | 'log'
  | 'brokerUrlOf'
  | 'tokenOf'
  | 'clientFor'
  | 'withState'
  | 'requirePermission'
  | 'track'
  | 'epoch'
  | 'newEpoch'
>;

/**
 * The connection list and the session, as the popup sees them: the list and each user record
 * loaded from the broker (one refresh at a time; what an older session or broker brings back late
 * is dropped), a connection disconnected, the session signed out of or ended.
 */
export function createSync(core: SyncCore) {
  const { state, view, now } = core;
  let refreshing: Promise<void> | null = null;

  function refresh(): Promise<void> {
    refreshing ??= core.track(
      doRefresh().finally(() => {
        refreshing = null;
      }),
    );
    return refreshing;
  }

  async function doRefresh(): Promise<void> {
    const s = await state.read();
    const token = core.tokenOf(s);
    const started = core.epoch();
    const stale = () => core.epoch() !== started;
    if (token === null) {
      await view.update((v) => ({
        ...core.withState(v, s),
        connections: [],
        sync: { status: 'idle', problem: null, at: null },
      }));
      return;
    }
    const client = core.clientFor(core.brokerUrlOf(s));
    await view.update((v) => ({
      ...core.withState(v, s),
      sync: { ...v.sync, status: 'loading', problem: null },
    }));
    let list: Connection[];
    try {
      await core.requirePermission(client.baseUrl);
      list = await client.listConnections(token);
    } catch (error) {
      if (!stale()) await syncFailed(toProblem(error));
      return;
    }
    if (stale()) return;
    await view.update((v) => ({ ...v, connections: mergeConnections(v.connections, list) }));
    await Promise.all(
      list.filter((c) => c.status === 'connected').map((c) => loadUser(client, token, c.id, stale)),
    );
    if (stale()) return;
    await view.update((v) => ({ ...v, sync: { status: 'ok', problem: null, at: now() } }));
  }

  async function loadUser(
    client: BrokerClient,
    token: string,
    id: string,
    stale: () => boolean,
  ): Promise<void> {
    try {
      const record = await client.getUser(token, id);
      if (stale()) return;
      await updateConnection(id, (c) => ({
        ...c,
        user: { status: 'loaded', record, fetchedAt: now() },
      }));
    } catch (error) {
      const problem = toProblem(error);
      if (stale()) return;
      if (problem.code === 'invalid_session') {
        await endSession({ kind: 'session_ended' });
        return;
      }
      await updateConnection(id, (c) => ({
        ...c,
        // The broker found the connection disconnected on the way: show it as such.
        ...(problem.code === 'reauthorization_required' && {
          status: 'disconnected',
          disconnectedReason: c.disconnectedReason,
        }),
        user: {
          status: 'failed',
          problem,
          ...(c.user.record !== undefined && { record: c.user.record }),
        },
      }));
    }
  }

  function updateConnection(id: string, change: (c: ConnectionView) => ConnectionView) {
    return view.update((v) => ({
      ...v,
      connections: v.connections.map((c) => (c.id === id ? change(c) : c)),
    }));
  }

  async function syncFailed(problem: Problem): Promise<void> {
    core.log('sync.failed', { code: problem.code });
    if (problem.code === 'invalid_session') {
      await endSession({ kind: 'session_ended' });
      return;
    }
    await view.update((v) => ({ ...v, sync: { ...v.sync, status: 'failed', problem } }));
  }

  /**
   * Forget the session locally; the list goes with it. The list first, with the copy kept in
   * storage.local (local:lastView, one write), then the token: a worker stopped in between leaves
   * a session without its list, which the next refresh reloads, never a list without a session.
   * A refresh that read the token in between is stale once it is gone, and what it brought back
   * is dropped again.
   */
  async function endSession(notice: Notice): Promise<void> {
    core.newEpoch();
    const signedOut = (v: View, s: PersistedState): View => ({
      ...core.withState(v, { ...s, session: null }),
      connections: [],
      sync: { status: 'idle', problem: null, at: null },
      notice,
    });
    const before = await state.read();
    await view.update((v) => signedOut(v, before));
    const after = await state.update((current) => ({ ...current, session: null }));
    core.newEpoch();
    await view.update((v) => signedOut(v, after));
  }

  /**
   * What an integrator's API call found: licences the view shows connected are disconnected.
   * Shown as the refresh shows them (the last user record kept), so the popup, the badge and the
   * change feed hear of it without waiting for the next refresh. Dropped when the session or the
   * broker changed since the call began, and when the view already says so.
   */
  async function noteDisconnected(
    found: readonly { readonly id: string; readonly reason: DisconnectedReason | null }[],
    since: number,
  ): Promise<void> {
    const news = (v: View) =>
      found.filter((f) => v.connections.some((c) => c.id === f.id && c.status === 'connected'));
    if (core.epoch() !== since || news(await view.read()).length === 0) return;
    let noted = 0;
    await view.update((v) => {
      if (core.epoch() !== since) return v;
      const fresh = news(v);
      noted = fresh.length;
      return {
        ...v,
        connections: v.connections.map((c) => {
          const f = fresh.find((x) => x.id === c.id);
          if (f === undefined) return c;
          return {
            ...c,
            status: 'disconnected',
            accessExpiresAt: null,
            disconnectedReason: f.reason,
            user: {
              status: 'failed',
              problem: { code: 'reauthorization_required' },
              ...(c.user.record !== undefined && { record: c.user.record }),
            },
          };
        }),
      };
    });
    if (noted > 0) core.log('api.found_disconnected', { count: noted });
  }

  async function disconnect(connectionId: string): Promise<View> {
    const s = await state.read();
    const token = core.tokenOf(s);
    if (token === null) return view.read();
    try {
      await core.clientFor(core.brokerUrlOf(s)).deleteConnection(token, connectionId);
    } catch (error) {
      const problem = toProblem(error);
      if (problem.code === 'invalid_session') {
        await endSession({ kind: 'session_ended' });
        return view.read();
      }
      // not_found: already gone on the broker, which is what the user wanted.
      if (problem.code !== 'not_found') {
        core.log('disconnect.failed', { code: problem.code });
        return view.update((v) => ({ ...v, notice: { kind: 'action_failed', problem } }));
      }
    }
    core.log('disconnect.succeeded');
    return view.update((v) => ({
      ...v,
      connections: v.connections.filter((c) => c.id !== connectionId),
      notice: { kind: 'disconnected', connectionId },
      flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
    }));
  }

  async function signOut(): Promise<View> {
    const s = await state.read();
    const token = core.tokenOf(s);
    let notice: Notice = { kind: 'signed_out' };
    if (token !== null) {
      try {
        await core.clientFor(core.brokerUrlOf(s)).deleteSession(token);
      } catch (error) {
        const problem = toProblem(error);
        // The user asked to sign out: forget the session here either way, and say when the
        // broker could not be told (its session then ends when it expires).
        if (problem.code !== 'invalid_session') notice = { kind: 'signed_out_locally', problem };
      }
    }
    core.log('signout', { local_only: notice.kind === 'signed_out_locally' });
    await endSession(notice);
    return view.update((v) => ({
      ...v,
      flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
    }));
  }

  return { refresh, endSession, noteDisconnected, disconnect, signOut };
}
