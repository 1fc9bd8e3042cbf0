import type { DisconnectedReason } from '@baton/shared';
import { storage } from 'wxt/utils/storage';
import { emptyView, type ConnectionView, type View, type ViewCache } from './view.ts';

/**
 * The licenses the popup last showed, kept in `storage.local` as a versioned item of its own, so
 * that the popup paints them at once when `storage.session` is empty (after a browser restart) and
 * refreshes them in place, instead of waiting seconds for the broker on a blank page.
 *
 * It holds what a card shows (the license's connection and its user record: names, e-mail
 * addresses, as the provider gives them) and no secret: content scripts can read storage.local,
 * and a listed origin may fetch the same through `api.request` anyway. The background writes it
 * with every view that changes it (view.ts) and removes it when the session ends, by sign-out or
 * otherwise, in one write and before the session token (background/sync.ts); docs/privacy.md
 * says so.
 *
 * Version 1. A later shape gets a version and a migration, as `local:state` does.
 */
export const LAST_VIEW_KEY = 'local:lastView';
export const LAST_VIEW_VERSION = 1;

export interface CachedConnection {
  readonly id: string;
  readonly status: 'connected' | 'disconnected';
  readonly apiOrigin: string;
  readonly connectedAt: string;
  readonly accessExpiresAt: string | null;
  readonly disconnectedReason: DisconnectedReason | null;
  /** The last user record loaded for it, if any (`users.me`, shape not specified). */
  readonly record?: unknown;
}

export interface LastView {
  /** The broker the licenses are connected through. */
  readonly brokerUrl: string;
  /** When the list was last loaded from the broker. */
  readonly at: number | null;
  readonly connections: readonly CachedConnection[];
}

export const lastViewItem = storage.defineItem<LastView | null>(LAST_VIEW_KEY, {
  fallback: null,
  version: LAST_VIEW_VERSION,
});

export type LastViewItem = typeof lastViewItem;

/** What to keep of a view: its licenses while signed in; nothing otherwise. */
export function lastViewOf(view: View): LastView | null {
  if (!view.signedIn || view.connections.length === 0) return null;
  return {
    brokerUrl: view.brokerUrl,
    at: view.sync.at,
    connections: view.connections.map((c) => ({
      id: c.id,
      status: c.status,
      apiOrigin: c.apiOrigin,
      connectedAt: c.connectedAt,
      accessExpiresAt: c.accessExpiresAt,
      disconnectedReason: c.disconnectedReason,
      ...(c.user.record !== undefined && { record: c.user.record }),
    })),
  };
}

/**
 * The view to paint from what was kept: signed in, its licenses as last loaded (each record shown
 * while a newer one loads), nothing running, no message.
 */
export function viewFromLastView(last: LastView): View {
  return {
    ...emptyView(last.brokerUrl),
    signedIn: true,
    sync: { status: 'idle', problem: null, at: last.at },
    connections: last.connections.map((c): ConnectionView => ({
      id: c.id,
      status: c.status,
      apiOrigin: c.apiOrigin,
      connectedAt: c.connectedAt,
      accessExpiresAt: c.accessExpiresAt,
      disconnectedReason: c.disconnectedReason,
      user:
        c.status === 'connected'
          ? { status: 'loading', ...(c.record !== undefined && { record: c.record }) }
          : {
              status: 'failed',
              problem: { code: 'reauthorization_required' },
              ...(c.record !== undefined && { record: c.record }),
            },
    })),
  };
}

/** `Record<DisconnectedReason, …>` keeps this in step with @baton/shared without its schemas. */
const REASONS: Record<DisconnectedReason, true> = {
  refresh_rejected: true,
  refresh_response_lost: true,
  api_url_not_allowed: true,
  disconnected_by_operator: true,
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isString = (value: unknown): value is string => typeof value === 'string' && value !== '';

function parseConnection(value: unknown): CachedConnection | null {
  if (!isRecord(value)) return null;
  const { id, status, apiOrigin, connectedAt, accessExpiresAt, disconnectedReason } = value;
  if (!isString(id) || !isString(apiOrigin) || !isString(connectedAt)) return null;
  if (status !== 'connected' && status !== 'disconnected') return null;
  return {
    id,
    status,
    apiOrigin,
    connectedAt,
    accessExpiresAt: isString(accessExpiresAt) ? accessExpiresAt : null,
    disconnectedReason:
      status === 'disconnected' &&
      typeof disconnectedReason === 'string' &&
      Object.hasOwn(REASONS, disconnectedReason)
        ? (disconnectedReason as DisconnectedReason)
        : null,
    ...(value['record'] !== undefined && { record: value['record'] }),
  };
}

/**
 * Reads a kept value defensively: anything malformed is no cache at all (the popup then waits
 * for the background, as it would on a first start), never an exception or a half-drawn card.
 */
export function parseLastView(value: unknown): LastView | null {
  if (!isRecord(value) || !isString(value['brokerUrl']) || !Array.isArray(value['connections']))
    return null;
  const connections = value['connections'].map(parseConnection);
  if (connections.length === 0 || connections.some((c) => c === null)) return null;
  const at = value['at'];
  return {
    brokerUrl: value['brokerUrl'],
    at: typeof at === 'number' && Number.isFinite(at) ? at : null,
    connections: connections as CachedConnection[],
  };
}

/** The view kept in `item`, ready to paint, or null. */
export async function readLastView(item: LastViewItem): Promise<View | null> {
  const last = parseLastView(await item.getValue());
  return last === null ? null : viewFromLastView(last);
}

/**
 * The cache as the view store uses it: read when storage.session has no view, and kept in step
 * with each view written (a write only when what is kept changes, so at most a few per refresh).
 */
export function lastViewCache(item: LastViewItem): ViewCache {
  let written: string | undefined;
  return {
    read: () => readLastView(item),
    async keep(view) {
      const last = lastViewOf(view);
      const text = JSON.stringify(last);
      if (text === written) return;
      if (last === null) await item.removeValue();
      else await item.setValue(last);
      written = text;
    },
  };
}
