import type { Locale } from '@baton/shared';
import { browser } from 'wxt/browser';
import type { BrokerUrlProblem } from './broker-url.ts';
import type { FlowState, View } from './state/view.ts';

/**
 * The one message map between the popup / options page and the background. Each message is
 * `{ type, data }`; each reply is `{ ok: true, value }` or `{ ok: false, error }` (an internal
 * failure, logged; the UI shows a generic sentence). Failures the user should understand travel
 * inside the values (the view's `flow`, `sync` and `notice`), not as rejections.
 */
export interface MessageMap {
  /** The current view (the popup normally reads it from storage.session). */
  'view.get': { request: null; response: View };
  /** Reload the connections and each user record from the broker; answers when done. */
  'view.refresh': { request: null; response: View };
  /** Start the authorization flow in the background; answers at once with the flow's state. */
  'flow.start': { request: { locale: Locale; reconnectId: string | null }; response: FlowState };
  'connection.disconnect': { request: { connectionId: string }; response: View };
  /** `DELETE /session`: sign out of every license. */
  'session.signOut': { request: null; response: View };
  /** Forget the last flow outcome and notice once the user has read them. */
  'notice.dismiss': { request: null; response: View };
  'settings.get': { request: null; response: SettingsView };
  /** A partial update; a new broker URL must already be granted (permissions.request). */
  'settings.save': { request: SettingsChange; response: SettingsSaveResult };
}

export interface SettingsView {
  /** The broker in use, normalised. */
  readonly brokerUrl: string;
  /** The broker the extension was built for. */
  readonly defaultBrokerUrl: string;
  /** The default language in force (the organisation's, else the user's); null: automatic. */
  readonly locale: Locale | null;
  /** The settings the organisation holds (managed storage): shown, and not changeable. */
  readonly managed: { readonly brokerUrl: boolean; readonly locale: boolean };
  /** `identity.getRedirectURL()`: the broker operator must allow it. */
  readonly redirectUrl: string;
  /** Whether the extension may call `brokerUrl` (its host permission is granted). */
  readonly hostPermissionGranted: boolean;
}

export interface SettingsChange {
  /** null: back to the build's broker. */
  readonly brokerUrl?: string | null;
  readonly locale?: Locale | null;
}

export type SettingsSaveResult =
  | { readonly ok: true; readonly settings: SettingsView }
  | {
      readonly ok: false;
      /** `managed`: the change touches a setting the organisation holds. */
      readonly problem: BrokerUrlProblem | 'permission_missing' | 'managed';
    };

export type MessageType = keyof MessageMap;
export type MessageRequest<K extends MessageType> = MessageMap[K]['request'];
export type MessageResponse<K extends MessageType> = MessageMap[K]['response'];
export type Envelope = { [K in MessageType]: { type: K; data: MessageRequest<K> } }[MessageType];
export type Reply<K extends MessageType> =
  { ok: true; value: MessageResponse<K> } | { ok: false; error: string };
export type Handlers = {
  [K in MessageType]: (data: MessageRequest<K>) => Promise<MessageResponse<K>>;
};

export class MessageError extends Error {
  constructor(type: MessageType, reason: string) {
    super(`${type} failed: ${reason}`);
    this.name = 'MessageError';
  }
}

/** The popup's and options page's side: typed request, typed answer. */
export async function sendMessage<K extends MessageType>(
  type: K,
  data: MessageRequest<K>,
): Promise<MessageResponse<K>> {
  const reply = (await browser.runtime.sendMessage({ type, data })) as Reply<K> | undefined;
  if (reply === undefined || reply === null) throw new MessageError(type, 'no answer');
  if (!reply.ok) throw new MessageError(type, reply.error);
  return reply.value;
}
