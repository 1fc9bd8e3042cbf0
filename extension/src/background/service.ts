import type { Connection, Locale } from '@baton/shared';
import { hostPermissionFor, parseBrokerUrl } from '../broker-url.ts';
import type { Handlers, SettingsChange, SettingsSaveResult, SettingsView } from '../messaging.ts';
import { ProblemError, toProblem, type Problem } from '../problems.ts';
import type { PersistedState, StateStore } from '../state/persisted.ts';
import type { ConnectionView, FlowState, Notice, View, ViewStore } from '../state/view.ts';
import { createBrokerClient, type BrokerClient } from './broker-client.ts';
import { authStartUrl, createPkce, launchFailure, readFinalRedirect } from './flow.ts';

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
  /** Events with codes and flags only: never a token, a handoff, a verifier or user data. */
  readonly log?: (event: string, fields?: Record<string, string | number | boolean>) => void;
}

export interface Background {
  readonly handlers: Handlers;
  /** Start-up work (migration, recovering from a flow the previous worker did not finish). */
  readonly ready: Promise<void>;
  /** Resolves when no flow and no refresh is running (for tests and callers that must wait). */
  idle(): Promise<void>;
}

export function createBackground(deps: BackgroundDeps): Background {
  const { state, view, now } = deps;
  const log = deps.log ?? (() => undefined);
  const running = new Set<Promise<unknown>>();
  let activeFlow: FlowState | null = null;
  let refreshing: Promise<void> | null = null;
  /** Bumped whenever the session or the broker changes: late results of older work are dropped. */
  let epoch = 0;

  function track<T>(work: Promise<T>): Promise<T> {
    running.add(work);
    void work.finally(() => running.delete(work)).catch(() => undefined);
    return work;
  }

  const brokerUrlOf = (s: PersistedState) => s.settings.brokerUrl ?? deps.buildBrokerUrl;
  const tokenOf = (s: PersistedState) =>
    s.session !== null && s.session.brokerUrl === brokerUrlOf(s) ? s.session.sessionToken : null;
  const clientFor = (baseUrl: string): BrokerClient =>
    createBrokerClient({ baseUrl, fetch: deps.fetch, now });

  /** The view's copy of the settings and of "is there a session for this broker". */
  function withState(v: View, s: PersistedState): View {
    return {
      ...v,
      brokerUrl: brokerUrlOf(s),
      locale: s.settings.locale,
      signedIn: tokenOf(s) !== null,
    };
  }

  async function requirePermission(brokerUrl: string): Promise<void> {
    if (!(await deps.hasHostPermission(hostPermissionFor(brokerUrl)))) {
      throw new ProblemError({ code: 'permission_missing' });
    }
  }

  const ready = (async () => {
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

  /** Single flight: while a flow runs, another start answers with the running one. */
  function startFlow(locale: Locale, reconnectId: string | null): Promise<FlowState> {
    if (activeFlow !== null) return Promise.resolve(activeFlow);
    const flowState: FlowState = { status: 'running', locale, reconnectId, startedAt: now() };
    activeFlow = flowState;
    const run = async () => {
      try {
        await view.update((v) => ({ ...v, flow: flowState, notice: null }));
        return await runFlow(locale, reconnectId);
      } finally {
        // The flow is over once its outcome is in the view: another may start during the refresh.
        activeFlow = null;
      }
    };
    void track(run().then((connected) => (connected ? refresh() : undefined)));
    return Promise.resolve(flowState);
  }

  /** Runs one flow to its outcome, written to the view; true when a licence was connected. */
  async function runFlow(locale: Locale, reconnectId: string | null): Promise<boolean> {
    const stopKeepAlive = deps.keepAlive?.() ?? (() => undefined);
    try {
      const before = await state.read();
      const brokerUrl = brokerUrlOf(before);
      await requirePermission(brokerUrl);
      const client = clientFor(brokerUrl);
      await client.ping();

      const pkce = await createPkce(deps.createVerifier);
      const redirectUri = deps.identity.getRedirectURL();
      let finalUrl: string | undefined;
      try {
        finalUrl = await deps.identity.launchWebAuthFlow(
          authStartUrl(brokerUrl, locale, redirectUri, pkce.challenge),
        );
      } catch (error) {
        throw new ProblemError({ code: launchFailure(error) }, { cause: error });
      }
      const handoff = readFinalRedirect(finalUrl, redirectUri);

      // Join the existing session, if any, so that every licence ends up in one session.
      const existing = tokenOf(before);
      const created = await client.createSession(
        { handoff, code_verifier: pkce.verifier },
        existing,
      );
      const joined = existing !== null && created.session_token === existing;
      await state.update((s) => ({
        ...s,
        session: { sessionToken: created.session_token, brokerUrl },
      }));
      if (!joined) epoch += 1;
      const current = await view.read();
      const reconnected = joined && current.connections.some((c) => c.id === created.connection.id);
      await view.update((v) => ({
        ...v,
        signedIn: true,
        notice: null,
        flow: { status: 'succeeded', connectionId: created.connection.id, reconnected, at: now() },
        connections: upsertConnection(joined ? v.connections : [], created.connection),
      }));
      log('flow.succeeded', { joined, reconnected });
      return true;
    } catch (error) {
      const problem = toProblem(error);
      log('flow.failed', { code: problem.code });
      await view.update((v) => ({
        ...v,
        flow: { status: 'failed', problem, reconnectId, at: now() },
      }));
      return false;
    } finally {
      stopKeepAlive();
    }
  }

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

  async function settingsView(s: PersistedState): Promise<SettingsView> {
    const brokerUrl = brokerUrlOf(s);
    return {
      brokerUrl,
      defaultBrokerUrl: deps.buildBrokerUrl,
      locale: s.settings.locale,
      redirectUrl: deps.identity.getRedirectURL(),
      hostPermissionGranted: await deps.hasHostPermission(hostPermissionFor(brokerUrl)),
    };
  }

  async function saveSettings(change: SettingsChange): Promise<SettingsSaveResult> {
    let brokerUrl: string | null | undefined = undefined;
    if (change.brokerUrl !== undefined && change.brokerUrl !== null) {
      const parsed = parseBrokerUrl(change.brokerUrl);
      if (!parsed.ok) return { ok: false, problem: parsed.problem };
      if (!(await deps.hasHostPermission(hostPermissionFor(parsed.url)))) {
        return { ok: false, problem: 'permission_missing' };
      }
      brokerUrl = parsed.url === deps.buildBrokerUrl ? null : parsed.url;
    } else if (change.brokerUrl === null) {
      brokerUrl = null;
    }
    const before = await state.read();
    const after = await state.update((s) => ({
      ...s,
      settings: {
        brokerUrl: brokerUrl === undefined ? s.settings.brokerUrl : brokerUrl,
        locale: change.locale === undefined ? s.settings.locale : change.locale,
      },
    }));
    const brokerChanged = brokerUrlOf(before) !== brokerUrlOf(after);
    if (brokerChanged) epoch += 1;
    await view.update((v) => ({
      ...withState(v, after),
      ...(brokerChanged && {
        connections: [],
        notice: null,
        sync: { status: 'idle', problem: null, at: null },
      }),
    }));
    log('settings.saved', { broker_changed: brokerChanged });
    if (brokerChanged) void refresh();
    return { ok: true, settings: await settingsView(after) };
  }

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
    'flow.start': afterReady(({ locale, reconnectId }) => startFlow(locale, reconnectId)),
    'connection.disconnect': afterReady(({ connectionId }) => disconnect(connectionId)),
    'session.signOut': afterReady(signOut),
    'notice.dismiss': afterReady(() =>
      view.update((v) => ({
        ...v,
        notice: null,
        flow: v.flow.status === 'running' ? v.flow : { status: 'idle' },
      })),
    ),
    'settings.get': afterReady(async () => settingsView(await state.read())),
    'settings.save': afterReady(saveSettings),
  };

  return {
    handlers,
    ready,
    async idle() {
      await ready;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}

function toConnectionView(c: Connection, user: ConnectionView['user']): ConnectionView {
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
    // reauthorization_required), but the last record still says which licence it was.
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

function upsertConnection(
  previous: readonly ConnectionView[],
  connection: Connection,
): ConnectionView[] {
  const merged = mergeConnections(previous, [connection])[0];
  if (merged === undefined) return [...previous];
  return previous.some((c) => c.id === connection.id)
    ? previous.map((c) => (c.id === connection.id ? merged : c))
    : [...previous, merged];
}
