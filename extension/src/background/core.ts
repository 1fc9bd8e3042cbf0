import type { DisconnectedReason } from '@baton/shared';
import type { ManagedSettings } from '../managed.ts';
import type { PersistedState, StateStore } from '../state/persisted.ts';
import type { Notice, View, ViewStore } from '../state/view.ts';
import type { ActionApi, Messages } from './badge.ts';
import type { BrokerClient } from './broker-client.ts';
import type { AlarmsApi } from './status-check.ts';

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
  /** `browser.action`, for the badge (badge.ts). Absent: no badge. */
  readonly action?: ActionApi;
  /** `browser.i18n.getMessage`, for the badge's title. Absent: the message keys. */
  readonly message?: Messages;
  /**
   * `browser.alarms`, for the status check (status-check.ts); `onAlarm` must add its listener at
   * once (the alarm may be what woke the worker). Absent: no status check.
   */
  readonly alarms?: AlarmsApi & { onAlarm(listener: (alarm: { name: string }) => void): void };
  /** Uniform in [0, 1), as `Math.random`: the status check's jitter. */
  readonly random?: () => number;
  /** Events with codes and flags only: never a token, a handoff, a verifier or user data. */
  readonly log?: (event: string, fields?: Record<string, string | number | boolean>) => void;
}

/**
 * What the background's parts (the flow runner, the settings, the connection list, the API) share:
 * the injected effects, the two stores, and the few rules about them. service.ts makes it; each
 * part takes only the members it uses (a `Pick` of this, named beside the part: `SyncCore`,
 * `FlowRunnerCore`, `SettingsCore`, `ApiCallsCore`) and imports nothing of service.ts.
 */
export interface BackgroundCore {
  readonly deps: BackgroundDeps;
  readonly state: StateStore;
  readonly view: ViewStore;
  readonly now: () => number;
  readonly log: (event: string, fields?: Record<string, string | number | boolean>) => void;
  /** The organisation's settings in force (managed storage). */
  managed(): ManagedSettings;
  /** The broker in use: the organisation's, else the one set in the options, else the build's. */
  brokerUrlOf(s: PersistedState): string;
  /** The session token for that broker, or null. */
  tokenOf(s: PersistedState): string | null;
  clientFor(baseUrl: string): BrokerClient;
  /** The view's copy of the settings and of "is there a session for this broker". */
  withState(v: View, s: PersistedState): View;
  /** Rejects with `permission_missing` unless the extension may reach the broker. */
  requirePermission(brokerUrl: string): Promise<void>;
  /** Counts `work` as running until it settles (see Background.idle). */
  track<T>(work: Promise<T>): Promise<T>;
  /** Bumped whenever the session or the broker changes: work started under an older one is stale. */
  epoch(): number;
  /** The session or the broker changed: late results of older work are to be dropped. */
  newEpoch(): void;
  /** Reload the connection list and each user record (single flight). */
  refresh(): Promise<void>;
  /** Forget the session locally (the broker said it is gone, or the user signed out). */
  endSession(notice: Notice): Promise<void>;
  /**
   * An answer begun under epoch `since` (an integrator's API call) found these licences
   * disconnected: the view says so too, unless the session or the broker changed meanwhile.
   */
  noteDisconnected(
    found: readonly { readonly id: string; readonly reason: DisconnectedReason | null }[],
    since: number,
  ): Promise<void>;
}
