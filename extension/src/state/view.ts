import type { DisconnectedReason, Locale } from '@baton/shared';
import { storage } from 'wxt/utils/storage';
import type { Problem } from '../problems.ts';
import { serialisedStore, type SerialisedStore } from './serialised.ts';

/**
 * What the popup shows, written only by the background and kept in `storage.session`: the popup
 * paints it at once when it opens, then watches it. It holds no secret (no session token, no
 * handoff, no verifier), but it does hold the user's name and e-mail, hence `session` (memory
 * only, cleared when the browser closes) rather than `local`.
 */
export type FlowState =
  | { readonly status: 'idle' }
  | {
      readonly status: 'running';
      readonly locale: Locale;
      readonly reconnectId: string | null;
      readonly startedAt: number;
    }
  | {
      readonly status: 'succeeded';
      readonly connectionId: string;
      readonly reconnected: boolean;
      readonly at: number;
    }
  | {
      readonly status: 'failed';
      readonly problem: Problem;
      readonly reconnectId: string | null;
      readonly at: number;
    };

/** The user record behind one connection (`GET /connections/:id/api/users.me`). */
export type UserState =
  | { readonly status: 'loading'; readonly record?: unknown }
  | { readonly status: 'loaded'; readonly record: unknown; readonly fetchedAt: number }
  | { readonly status: 'failed'; readonly problem: Problem; readonly record?: unknown };

export interface ConnectionView {
  readonly id: string;
  readonly status: 'connected' | 'disconnected';
  readonly apiOrigin: string;
  readonly connectedAt: string;
  readonly accessExpiresAt: string | null;
  /** Set when `status` is `disconnected`; null when the broker gave no reason. */
  readonly disconnectedReason: DisconnectedReason | null;
  readonly user: UserState;
}

export interface SyncState {
  readonly status: 'idle' | 'loading' | 'ok' | 'failed';
  readonly problem: Problem | null;
  /** When the list was last loaded successfully. */
  readonly at: number | null;
}

/** The outcome of the last action that is not a flow (sign out, disconnect, session ended). */
export type Notice =
  | { readonly kind: 'signed_out' }
  | { readonly kind: 'signed_out_locally'; readonly problem: Problem }
  | { readonly kind: 'session_ended' }
  | { readonly kind: 'disconnected'; readonly connectionId: string }
  | { readonly kind: 'action_failed'; readonly problem: Problem };

export interface View {
  readonly brokerUrl: string;
  /**
   * The language of the authorization pages to offer first: the organisation's, else the one the
   * user last signed in with, else the options page's default (null: from the browser's languages).
   */
  readonly locale: Locale | null;
  readonly signedIn: boolean;
  readonly flow: FlowState;
  readonly sync: SyncState;
  readonly connections: readonly ConnectionView[];
  readonly notice: Notice | null;
}

export function emptyView(brokerUrl: string): View {
  return {
    brokerUrl,
    locale: null,
    signedIn: false,
    flow: { status: 'idle' },
    sync: { status: 'idle', problem: null, at: null },
    connections: [],
    notice: null,
  };
}

/** `storage.session` is cleared on extension update, so this item needs no versioning. */
export const viewItem = storage.defineItem<View | null>('session:view', { fallback: null });

export type ViewStore = SerialisedStore<View>;

/** Where the last view outlives storage.session (last-view.ts: storage.local). */
export interface ViewCache {
  /** The kept view, ready to paint, or null. */
  read(): Promise<View | null>;
  /** Keep what of `view` is kept (or drop it: signed out). */
  keep(view: View): Promise<void>;
}

/**
 * Serialised read-modify-write: the flow and the refresh update the view concurrently. With no
 * view in storage.session (a browser restart), the cached one is the start, so that the refresh
 * updates the licenses in place; each write keeps the cache in step.
 */
export function createViewStore(
  item: typeof viewItem,
  brokerUrl: () => string,
  cache: ViewCache,
): ViewStore {
  return serialisedStore(
    async () => (await item.getValue()) ?? (await cache.read()) ?? emptyView(brokerUrl()),
    async (view) => {
      await item.setValue(view);
      await cache.keep(view);
    },
  );
}
