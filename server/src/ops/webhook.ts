import { retryAfterMs } from '../base/retry-after.ts';
import { signatures, type OutboxEntry } from './events.ts';

/** What one POST of an event came to: 2xx, or why not (and when the receiver asked us back). */
export type Outcome =
  { ok: true } | { ok: false; outcome: string; retryAfterMs?: number | undefined };

/**
 * The integrator's receiver (EVENTS_WEBHOOK_URL): one event POSTed as Standard Webhooks says,
 * signed with each secret, bounded in time, never following a redirect, its answer's body not read.
 */
export function createWebhook(options: {
  url: string;
  secrets: readonly Buffer[];
  fetch: typeof globalThis.fetch;
  now: () => number;
  timeoutMs: number;
}) {
  const { now } = options;
  return {
    async post(event: OutboxEntry): Promise<Outcome> {
      const timestamp = String(Math.floor(now() / 1000));
      try {
        const response = await options.fetch(options.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'Baton-Webhooks',
            'webhook-id': event.id,
            'webhook-timestamp': timestamp,
            'webhook-signature': signatures(options.secrets, event.id, timestamp, event.body),
          },
          body: event.body,
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        await response.body?.cancel();
        if (response.ok) return { ok: true };
        return {
          ok: false,
          outcome: `status ${response.status}`,
          retryAfterMs: retryAfterMs(response.headers.get('retry-after'), now()),
        };
      } catch (error) {
        return { ok: false, outcome: failure(error as Error) };
      }
    },
  };
}

/**
 * Why a POST got no answer: the error's name and, when the network said, its code (`TypeError
 * (ECONNRESET)`). Never its message, which may quote the receiver's URL.
 */
function failure(error: Error): string {
  const { cause } = error as { cause?: unknown };
  const code =
    typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
  return typeof code === 'string' ? `${error.name} (${code})` : error.name;
}
