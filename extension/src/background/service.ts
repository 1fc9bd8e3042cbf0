import { hostPermissionFor } from '../broker-url.ts';
import type { ApiHandlers } from '../api.ts';
import type { Handlers } from '../messaging.ts';
import { NOT_MANAGED, effectiveSettings, parseManaged, type ManagedSettings } from '../managed.ts';
import { ProblemError } from '../problems.ts';
import type { PersistedState } from '../state/persisted.ts';
import type { FlowState, View, ViewStore } from '../state/view.ts';
import { createApiCalls } from './api-calls.ts';
import { createChangeFeed, publishingChanges, type ChangeFeed } from './api-changes.ts';
import { createBadge } from './badge.ts';
import { createBrokerClient, type BrokerClient } from './broker-client.ts';
import type { BackgroundCore, BackgroundDeps } from './core.ts';
import { createFlowRunner } from './flow-runner.ts';
import { createSettings } from './settings.ts';
import { createStatusCheck } from './status-check.ts';
import { createSync } from './sync.ts';

/**
 * The background, composed: the core its parts share (the settings in force, the session token,
 * the broker client, the epoch), the organisation's policy as it is read and changes, the message
 * maps over the parts (sync.ts, flow-runner.ts, settings.ts, api-calls.ts), and what follows each
 * write of the view: the API's change feed, the toolbar badge (badge.ts) and the status check's
 * alarm (status-check.ts).
 */
export interface Background {
  readonly handlers: Handlers;
  /** The integrator's API (api.ts), for extension pages and listed content scripts. */
  readonly api: ApiHandlers;
  /** What changed for the integrator's API, from each write of the view (api-changes.ts). */
  readonly changes: ChangeFeed;
  /** Start-up work (migration, recovering from a flow the previous worker did not finish). */
  readonly ready: Promise<void>;
  /** Resolves when no flow and no refresh is running (for tests and callers that must wait). */
  idle(): Promise<void>;
}

/** `view`, with `then` told of each view written before the writer goes on. */
function following(view: ViewStore, then: (written: View) => Promise<void>): ViewStore {
  return {
    read: () => view.read(),
    async update(change) {
      const written = await view.update(change);
      await then(written);
      return written;
    },
  };
}

export function createBackground(deps: BackgroundDeps): Background {
  const { state, now } = deps;
  const log = deps.log ?? (() => undefined);
  /** The organisation's settings, as last read; they win over the user's (managed.ts). */
  let managed: ManagedSettings = NOT_MANAGED;
  const changes = createChangeFeed();
  const badge =
    deps.action &&
    createBadge({ action: deps.action, message: deps.message ?? ((key) => key), log });
  const statusCheck =
    deps.alarms &&
    createStatusCheck({
      alarms: deps.alarms,
      now,
      random: deps.random ?? Math.random,
      managed: () => managed,
      log,
    });
  // Every part writes the view through this: what a write changed reaches the API's listeners,
  // the badge shows what the view says, and the status check runs while there is a session.
  const view = following(publishingChanges(deps.view, changes.publish), async (written) => {
    await badge?.show(written);
    await statusCheck?.follow(written);
  });
  const running = new Set<Promise<unknown>>();
  /** Bumped whenever the session or the broker changes: late results of older work are dropped. */
  let epoch = 0;

  function track<T>(work: Promise<T>): Promise<T> {
    running.add(work);
    void work.finally(() => running.delete(work)).catch(() => undefined);
    return work;
  }
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
      // The organisation's language, else the one the user last signed in with, else the default.
      locale: managed.locale ?? s.lastSignInLocale ?? inForce(s).locale,
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
    epoch: () => epoch,
    newEpoch: () => void (epoch += 1),
    refresh: () => sync.refresh(),
    endSession: (notice) => sync.endSession(notice),
    noteDisconnected: (found, since) => sync.noteDisconnected(found, since),
  };
  const sync = createSync(core);

  // Added now, while the worker starts: the alarm may be the event that woke it.
  deps.alarms?.onAlarm((alarm) => {
    if (statusCheck === undefined) return;
    void track(ready.then(() => statusCheck.fired(alarm.name, sync.refresh))).catch(
      (error: unknown) =>
        log('check.failed', { error: error instanceof Error ? error.name : 'unknown' }),
    );
  });

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
    await statusCheck?.policyChanged();
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
    if (brokerChanged) void sync.refresh();
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
      await sync.refresh();
      return view.read();
    }),
    'flow.start': afterReady(({ locale, reconnectId }) => flows.start(locale, reconnectId)),
    'connection.disconnect': afterReady(({ connectionId }) => sync.disconnect(connectionId)),
    'session.signOut': afterReady(sync.signOut),
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
    changes,
    ready,
    async idle() {
      await ready;
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
