import type { ManagedSettings } from '../managed.ts';
import type { PersistedState, StateStore } from '../state/persisted.ts';
import type { Notice, View, ViewStore } from '../state/view.ts';
import type { BrokerClient } from './broker-client.ts';
import type { BackgroundDeps } from './service.ts';

/**
 * What the background's parts (the flow runner, the settings, the connection list) share: the
 * injected effects, the two stores, and the few rules about them.
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
  /** The session or the broker changed: late results of older work are to be dropped. */
  newEpoch(): void;
  /** Reload the connection list and each user record (single flight). */
  refresh(): Promise<void>;
  /** Forget the session locally (the broker said it is gone, or the user signed out). */
  endSession(notice: Notice): Promise<void>;
}
