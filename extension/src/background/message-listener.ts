import { LOCALES, type Locale } from '@baton/shared';
import type { Envelope, Handlers, MessageRequest, MessageType } from '../messaging.ts';
import type { MessageSender } from './senders.ts';

/**
 * The background's side of the message map (src/messaging.ts): every request's shape is checked
 * before a handler sees it. Kept apart from the popup's side so that the popup bundle does not
 * pull in the shared zod schemas.
 */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isLocale = (value: unknown): value is Locale =>
  typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
const isNull = (data: unknown): data is null => data === null;
const isOptional = (data: Record<string, unknown>, key: string, check: (v: unknown) => boolean) =>
  !(key in data) || data[key] === null || check(data[key]);

/** Each request's shape, checked before a handler sees it. */
const requestGuards: { [K in MessageType]: (data: unknown) => data is MessageRequest<K> } = {
  'view.get': isNull,
  'view.refresh': isNull,
  'flow.start': (data): data is MessageRequest<'flow.start'> =>
    isRecord(data) &&
    isLocale(data['locale']) &&
    (data['reconnectId'] === null || typeof data['reconnectId'] === 'string'),
  'connection.disconnect': (data): data is MessageRequest<'connection.disconnect'> =>
    isRecord(data) && typeof data['connectionId'] === 'string' && data['connectionId'] !== '',
  'session.signOut': isNull,
  'notice.dismiss': isNull,
  'settings.get': isNull,
  'settings.save': (data): data is MessageRequest<'settings.save'> =>
    isRecord(data) &&
    isOptional(data, 'brokerUrl', (v) => typeof v === 'string') &&
    isOptional(data, 'locale', isLocale),
};

export function parseEnvelope(message: unknown): Envelope | null {
  if (!isRecord(message) || typeof message['type'] !== 'string') return null;
  const type = message['type'];
  if (!Object.hasOwn(requestGuards, type)) return null;
  const guard = requestGuards[type as MessageType];
  return guard(message['data']) ? (message as Envelope) : null;
}

function dispatch(handlers: Handlers, envelope: Envelope): Promise<unknown> {
  // The guard above tied `data` to `type`; TypeScript cannot follow that correlation.
  const handler = handlers[envelope.type] as (data: unknown) => Promise<unknown>;
  return handler(envelope.data);
}

/**
 * The background's `runtime.onMessage` listener. Answers through `sendResponse` (and returns
 * `true`), which Chrome, Firefox, the polyfill and WXT's fake browser all support. Messages that
 * are not ours, or from a sender that is not trusted (main.ts trusts the extension's own pages,
 * never a content script: senders.ts), are left unanswered.
 */
export function createMessageListener(
  handlers: Handlers,
  isTrustedSender: (sender: MessageSender) => boolean,
  onError: (type: MessageType, error: unknown) => void = () => undefined,
) {
  return (message: unknown, sender: MessageSender, sendResponse: (reply: unknown) => void) => {
    if (!isTrustedSender(sender)) return undefined;
    const envelope = parseEnvelope(message);
    if (envelope === null) return undefined;
    dispatch(handlers, envelope).then(
      (value) => sendResponse({ ok: true, value }),
      (error: unknown) => {
        onError(envelope.type, error);
        sendResponse({ ok: false, error: error instanceof Error ? error.name : 'Error' });
      },
    );
    return true as const;
  };
}
