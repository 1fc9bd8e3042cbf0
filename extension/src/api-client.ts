import { browser } from 'wxt/browser';
import {
  apiError,
  type ApiConnectionsResult,
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
 *
 * Every call resolves, never rejects: with the license API's answer, or `{ ok: false, error }`.
 */
export const batonApi = {
  /** A call to a license API path through the broker, with the session the popup holds. */
  request: (request: ApiRequest): Promise<ApiResult> => send('api.request', request),
  /** The session's connections (their ids are what `request` takes). */
  connections: (): Promise<ApiConnectionsResult> => send('api.connections', null),
};

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
