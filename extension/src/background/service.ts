import type { Connection } from '@baton/shared';
import { hostPermissionFor } from '../broker-url.ts';
import type { ApiHandlers } from '../api.ts';
import type { Handlers } from '../messaging.ts';
import { NOT_MANAGED, effectiveSettings, parseManaged, type ManagedSettings } from '../managed.ts';
import { ProblemError, toProblem, type Problem } from '../problems.ts';
import type { PersistedState, StateStore } from '../state/persisted.ts';
import type { ConnectionView, FlowState, Notice, View, ViewStore } from '../state/view.ts';
import { createApiCalls } from './api-calls.ts';
import { createBrokerClient, type BrokerClient } from './broker-client.ts';
import { mergeConnections } from './connection-views.ts';
import type { BackgroundCore } from './core.ts';
import { createFlowRunner } from './flow-runner.ts';
import { createSettings } from './settings.ts';

/**
 * The background's behaviour, with every outside effect injected: the broker (`fetch`), the
 * browser's identity and permissions APIs, the clock, and the two stores. entrypoints/background.ts
 * wires the real ones; the tests wire fakes.
 */
export interface BackgroundDeps {
  readonly buildBrokerUrl: string;
  readonly state: StateStore;
  readonly view: ViewStore;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly identity: {
    getRedirectURL(): string;
    /** `identity.launchWebAuthFlow({ url, interactive: true })`. */
    launchWebAuthFlow(url: string): Promise<string | undefined>;
  };
  /** Whether the extension holds the host permission (a match pattern) for the broker. */
  readonly hasHostPermission: (pattern: string) => Promise<boolean>;
  readonly createVerifier?: () => string;
  /** Keeps the service worker awake while the user is on the authorization pages. */
  readonly keepAlive?: () => () => void;
  /**
   * The organisation's settings (`storage.managed`, read as is: managed.ts checks them), and a
   * way to hear that they changed. Absent: nothing is managed.
   */
  readonly managed?: {
    read(): Promise<unknown>;
    onChange(listener: () => void): void;
  };
  /** Events with codes and flags only: never a token, a handoff, a verifier or user data. */
  readonly log?: (event: string, fields?: Record<string, string | number | boolean>) => void;
}

export interface Background {
  readonly handlers: Handlers;
  /** The integrator's API (api.ts), for extension pages and listed content scripts. */
  readonly api: ApiHandlers;
  /** Start-up work (migration, recovering from a flow the previous worker did not finish). */
  readonly ready: Promise<void>;
  /** Resolves when no flow and no refresh is running (for tests and callers that must wait). */
  idle(): Promise<void>;
}

export function createBackground(deps: BackgroundDeps): Background {
  const { state, view, now } = deps;
  const log = deps.log ?? (() => undefined);
  const running = new Set<Promise<unknown>>();
  let refreshing: Promise<void> | null = null;
  /** Bumped whenever the session or the broker changes: late results of older work are dropped. */
  let epoch = 0;

  function track<T>(work: Promise<T>): Promise<T> {
    running.add(work);
    void work.finally(() => running.delete(work)).catch(() => undefined);
    return work;
  }

  /** The organisation's settings, as last read; they win over the user's (managed.ts). */
  let managed: ManagedSettings = NOT_MANAGED;
  const inForce = (s: PersistedState) => effectiveSettings(s.settings, managed);
  const brokerUrlOf = (s: PersistedState) => inForce(s).brokerUrl ?? deps.buildBrokerUrl;
  const tokenOf = (s: PersistedState) =>
    s.session !== null && s.session.brokerUrl === brokerUrlOf(s) ? s.session.sessionToken : null;
  const clientFor = (baseUrl: string): BrokerClient =>
    createBrokerClient({ baseUrl, fetch: deps.fetch, now });

  /** The view's copy of the settings and of "is there a session for this broker". */
  function withState(v: View, s: PersistedState): View {
    return {
      ...v,
      brokerUrl: brokerUrlOf(s),
      locale: inForce(s).locale,
      signedIn: tokenOf(s) !== null,
    };
  }

  async function requirePermission(brokerUrl: string): Promise<void> {
    if (!(await deps.hasHostPermission(hostPermissionFor(brokerUrl)))) {
      throw new ProblemError({ code: 'permission_missing' });
    }
  }

  const core: BackgroundCore = {
    deps,
    state,
    view,
    now,
    log,
    managed: () => managed,
    brokerUrlOf,
    tokenOf,
    clientFor,
    withState,
    requirePermission,
    track,
    newEpoch: () => void (epoch += 1),
    refresh: () => refresh(),
    endSession: (notice) => endSession(notice),
  };

  async function readManaged(): Promise<ManagedSettings> {
    let raw: unknown = {};
    try {
      raw = (await deps.managed?.read()) ?? {};
    } catch {
      // Firefox rejects when no policy or managed-storage manifest exists: nothing is managed.
    }
    const { settings: read, ignored } = parseManaged(raw);
    for (const key of ignored) log('managed.ignored', { key });
    return read;
  }

  /** The policy changed while the browser runs: a new broker starts afresh, as on the options page. */
  async function managedChanged(): Promise<void> {
    const s = await state.read();
    const before = brokerUrlOf(s);
    managed = await readManaged();
    const brokerChanged = brokerUrlOf(s) !== before;
    if (brokerChanged) epoch += 1;
    await view.update((v) => ({
      ...withState(v, s),
      ...(brokerChanged && {
        connections: [],
        notice: null,
        sync: { status: 'idle', problem: null, at: null },
      }),
    }));
    log('managed.changed', { broker_changed: brokerChanged });
    if (brokerChanged) void refresh();
  }

  const ready = (async () => {
    managed = await readManaged();
    deps.managed?.onChange(() => void track(ready.then(managedChanged)));
    const s = await state.read();
    await view.update((v) => {
      // A flow lives in the worker's memory: if the view says one is running, the worker that ran
      // it has been stopped, and its result is lost.
      const flowState: FlowState =
        v.flow.status === 'running'
          ? {
              status: 'failed',
              problem: { code: 'interrupted' },
              reconnectId: v.flow.reconnectId,
              at: now(),
            }
          : v.flow;
      return withState({ ...v, flow: flowState }, s);
    });
  })();

  // ---- the authorization flow -------------------------------------------------------------

  const flows = createFlowRunner(core);

  // ---- connections and user records -------------------------------------------------------

  function refresh(): Promise<void> {
    refreshing ??= track(
      doRefresh().finally(() => {
        refreshing = null;
      }),
    );
    return refreshing;
  }

  async function doRefresh(): Promise<void> {
    const s = await state.read();
    const token = tokenOf(s);
    const started = epoch;
    const stale = () => epoch !== started;
    if (token === null) {
      await view.update((v) => ({
        ...withState(v, s),
        connections: [],
        sync: { status: 'idle', problem: null, at: null },
      }));
      return;
    }
    const client = clientFor(brokerUrlOf(s));
    await view.update((v) => ({
      ...withState(v, s),
      sync: { ...v.sync, status: 'loading', problem: null },
    }));
    let list: Connection[];
    try {
      await requirePermission(client.baseUrl);
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
    log('sync.failed', { code: problem.code });
    if (problem.code === 'invalid_session') {
      await endSession({ kind: 'session_ended' });
      return;
    }
    await view.update((v) => ({ ...v, sync: { ...v.sync, status: 'failed', problem } }));
  }

  /** Forget the session locally; the list goes with it. */
  async function endSession(notice: Notice): Promise<void> {
    epoch += 1;
    const s = await state.update((current) => ({ ...current, session: null }));
    await view.update((v) => ({
      ...withState(v, s),
      connections: [],
      sync: { status: 'idle', problem: null, at: null },
      notice,
    }));
  }

  async function disconnect(connectionId: string): Promise<View> {
    const s = await state.read();
    const token = tokenOf(s);
    if (token === null) return view.read();
    try {
      await clientFor(brokerUrlOf(s)).deleteConnection(token, connectionId);
    } catch (error) {
      const problem = toProblem(error);
      if (problem.code === 'invalid_session') {
        await endSession({ kind: 'session_ended' });
        return view.read();
      }
      // not_found: already gone on the broker, which is what the user wanted.
      if (problem.code !== 'not_found') {
        log('disconnect.failed', { code: problem.code });
        return view.update((v) => ({ ...v, notice: { kind: 'action_failed', problem } }));
      }
    }
    log('disconnect.succeeded');
    return view.update((v) => ({
      ...v,
      connections: v.connections.filter((c) => c.id !== connectionId),
      notice: { kind: 'disconnected', connectionId },
      flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
    }));
  }

  async function signOut(): Promise<View> {
    const s = await state.read();
    const token = tokenOf(s);
    let notice: Notice = { kind: 'signed_out' };
    if (token !== null) {
      try {
        await clientFor(brokerUrlOf(s)).deleteSession(token);
      } catch (error) {
        const problem = toProblem(error);
        // The user asked to sign out: forget the session here either way, and say when the
        // broker could not be told (its session then ends when it expires).
        if (problem.code !== 'invalid_session') notice = { kind: 'signed_out_locally', problem };
      }
    }
    log('signout', { local_only: notice.kind === 'signed_out_locally' });
    await endSession(notice);
    return view.update((v) => ({
      ...v,
      flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
    }));
  }

  // ---- settings ---------------------------------------------------------------------------

  const settings = createSettings(core);

  // ---- the message map --------------------------------------------------------------------

  const afterReady =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await ready;
      return fn(...args);
    };

  const handlers: Handlers = {
    'view.get': afterReady(() => view.read()),
    'view.refresh': afterReady(async () => {
      await refresh();
      return view.read();
    }),
    'flow.start': afterReady(({ locale, reconnectId }) => flows.start(locale, reconnectId)),
    'connection.disconnect': afterReady(({ connectionId }) => disconnect(connectionId)),
    'session.signOut': afterReady(signOut),
    'notice.dismiss': afterReady(() =>
      view.update((v) => ({
        ...v,
        notice: null,
        flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
      })),
    ),
    'settings.get': afterReady(async () => settings.view(await state.read())),
    'settings.save': afterReady(settings.save),
  };

  const apiCalls = createApiCalls(core);
  const api: ApiHandlers = {
    'api.request': afterReady(apiCalls['api.request']),
    'api.connections': afterReady(apiCalls['api.connections']),
  };

  return {
    handlers,
    api,
    ready,
    async idle() {
      await ready;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
