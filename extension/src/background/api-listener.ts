import { apiError, type ApiHandlers, type ApiMessageType } from '../api.ts';
import { originAllowed, type ApiOrigin } from '../api-origins.ts';
import { callerOf, type MessageSender, type Self } from './senders.ts';

export interface ApiListenerOptions {
  readonly self: Self;
  /** The origins the build lists (WXT_API_ORIGINS): content scripts elsewhere are refused. */
  readonly origins: readonly ApiOrigin[];
  /** Codes only: never the request, the answer or the caller's URL. */
  readonly log?: (event: string, fields?: Record<string, string | number | boolean>) => void;
}

const isApiType = (type: unknown, handlers: ApiHandlers): type is ApiMessageType =>
  typeof type === 'string' && type.startsWith('api.') && Object.hasOwn(handlers, type);

/**
 * The background's `runtime.onMessage` listener for the integrator's API (api.ts), beside the
 * popup's (message-listener.ts), which answers extension pages only. This one answers the
 * extension's own pages, and its content scripts on a listed origin; a content script elsewhere
 * gets `origin_not_allowed` and nothing else; any other sender is left unanswered. Each reply is
 * the handler's result, which never rejects.
 */
export function createApiListener(handlers: ApiHandlers, options: ApiListenerOptions) {
  const log = options.log ?? (() => undefined);
  return (message: unknown, sender: MessageSender, sendResponse: (reply: unknown) => void) => {
    if (typeof message !== 'object' || message === null) return undefined;
    const { type, data } = message as { type?: unknown; data?: unknown };
    if (!isApiType(type, handlers)) return undefined;
    const caller = callerOf(sender, options.self);
    if (caller === null) return undefined;
    if (caller.kind === 'content-script' && !originAllowed(caller.origin, options.origins)) {
      log('api.refused', { reason: 'origin_not_allowed' });
      sendResponse({ ok: false, error: apiError('origin_not_allowed') });
      return true as const;
    }
    const handler = handlers[type] as (data: unknown) => Promise<unknown>;
    handler(data).then(sendResponse, (error: unknown) => {
      log('api.failed', { type, error: error instanceof Error ? error.name : 'Error' });
      sendResponse({ ok: false, error: apiError('unexpected') });
    });
    return true as const;
  };
}
