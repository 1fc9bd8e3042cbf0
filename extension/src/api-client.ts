import { browser } from 'wxt/browser';
import {
  API_CHANGES_PORT,
  apiError,
  type ApiChange,
  type ApiChangesMessage,
  type ApiChangeStatus,
  type ApiConnectionsResult,
  type ApiError,
  type ApiMessageMap,
  type ApiMessageType,
  type ApiRequest,
  type ApiResult,
} from './api.ts';

export type * from './api.ts';

/**
 * The integrator's client of the extension's API (docs/extending.md), for a content script on a
 * listed origin or an extension page:
 *
 *   const list = await batonApi.connections();
 *   const me = await batonApi.request({ connectionId, method: 'GET', path: 'users.me' });
 *   if (me.ok && me.status === 200) show(me.body); else if (!me.ok) console.warn(me.error.code);
 *   const stop = batonApi.onChange((change) => void reload(change));
 *
 * Every call resolves, never rejects: with the license API's answer, or `{ ok: false, error }`.
 */
export const batonApi = {
  /** A call to a license API path through the broker, with the session the popup holds. */
  request: (request: ApiRequest): Promise<ApiResult> => send('api.request', request),
  /** The session's connections (their ids are what `request` takes). */
  connections: (): Promise<ApiConnectionsResult> => send('api.connections', null),
  /**
   * Calls `listener` with each change (a licence connected, disconnected or removed; signed out)
   * while the page is open; returns the function that stops it. `onStatus` hears `listening` once
   * changes come, or `stopped` with why they never will (`origin_not_allowed`, `no_answer`).
   */
  onChange: (listener: (change: ApiChange) => void, options?: ApiChangeOptions): (() => void) =>
    changeSubscriber((info) => browser.runtime.connect(info))(listener, options),
};

export interface ApiChangeOptions {
  readonly onStatus?: (status: ApiChangeStatus) => void;
}

/** What the client needs of a `runtime.Port`. */
export interface ApiPort {
  postMessage(message: unknown): void;
  disconnect(): void;
  readonly onMessage: { addListener(listener: (message: unknown) => void): void };
  readonly onDisconnect: { addListener(listener: () => void): void };
}

/**
 * `onChange` over `connect` (`runtime.connect`). Each subscription holds one port. A port the
 * background accepted (`api.listening`) and then lost (an idle service worker is stopped, and
 * its ports with it) is opened again at once: nothing changes while the background is stopped.
 * A port refused, or lost before it was accepted, or no port at all, stops the subscription for
 * good, with why: it never retries in a loop.
 */
export function changeSubscriber(connect: (info: { name: string }) => ApiPort) {
  return (listener: (change: ApiChange) => void, options: ApiChangeOptions = {}): (() => void) => {
    let port: ApiPort | null = null;
    let ended = false;
    let listening = false;
    const stop = (error: ApiError) => {
      if (ended) return;
      ended = true;
      port = null;
      options.onStatus?.({ state: 'stopped', error });
    };
    const open = () => {
      let current: ApiPort;
      try {
        current = connect({ name: API_CHANGES_PORT });
      } catch {
        stop(apiError('no_answer'));
        return;
      }
      port = current;
      let accepted = false;
      current.onMessage.addListener((message) => {
        if (ended || port !== current) return;
        const read = readChangesMessage(message);
        if (read?.type === 'api.listening') {
          accepted = true;
          if (!listening) {
            listening = true;
            options.onStatus?.({ state: 'listening' });
          }
        } else if (read?.type === 'api.change' && accepted) listener(read.change);
        else if (read?.type === 'api.refused') stop(read.error);
      });
      current.onDisconnect.addListener(() => {
        if (ended || port !== current) return;
        if (accepted) open();
        else stop(apiError('no_answer'));
      });
    };
    open();
    return () => {
      if (ended) return;
      ended = true;
      port?.disconnect();
      port = null;
    };
  };
}

/** One of the background's messages on the changes port, or null. */
function readChangesMessage(message: unknown): ApiChangesMessage | null {
  if (typeof message !== 'object' || message === null) return null;
  const { type, change, error } = message as { type?: unknown; change?: unknown; error?: unknown };
  if (type === 'api.listening') return { type };
  if (type === 'api.change' && typeof (change as { kind?: unknown } | null)?.kind === 'string')
    return { type, change: change as ApiChange };
  if (type === 'api.refused' && typeof (error as { code?: unknown } | null)?.code === 'string')
    return { type, error: error as ApiError };
  return null;
}

async function send<K extends ApiMessageType>(
  type: K,
  data: ApiMessageMap[K]['request'],
): Promise<ApiMessageMap[K]['response']> {
  let reply: unknown;
  try {
    reply = await browser.runtime.sendMessage({ type, data });
  } catch {
    // No background to answer (the extension was reloaded or updated under this page).
    return { ok: false, error: apiError('no_answer') };
  }
  const answered =
    typeof reply === 'object' &&
    reply !== null &&
    typeof (reply as { ok?: unknown }).ok === 'boolean';
  return answered
    ? (reply as ApiMessageMap[K]['response'])
    : { ok: false, error: apiError('no_answer') };
}
