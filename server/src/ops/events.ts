import type { DisconnectedReason } from '@baton/shared';
import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

/** What happened to a connection. Never a token, a session handle or a code: ids and origins. */
export type ConnectionEvent =
  | {
      type: 'connection.disconnected';
      connection: { id: string; api_origin: string; reason: DisconnectedReason };
    }
  | { type: 'connection.reconnected'; connection: { id: string; api_origin: string } };

export interface EventSink {
  /** Queue an event for delivery; never blocks, never throws. */
  emit(event: ConnectionEvent): void;
  /** Resolves once every queued event was delivered or given up on (for shutdown). */
  idle(): Promise<void>;
}

export const noEvents: EventSink = { emit() {}, idle: async () => {} };

export const SIGNATURE_HEADER = 'x-baton-signature';
export const TIMESTAMP_HEADER = 'x-baton-timestamp';

/** `v1=` + hex HMAC-SHA256 over `${timestamp}.${body}`: what a receiver recomputes and compares. */
export function signEvent(secret: string, timestamp: string, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export interface WebhookOptions {
  url: string;
  secret: string;
  fetch: typeof globalThis.fetch;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  log: Logger;
  /** Tries per event, the first included (default 6: about 30 s of back-off in all). */
  attempts?: number;
  /** First back-off; doubles each time (default 1 s). */
  backoffMs?: number;
  /** Bound on one delivery (default 5 s). */
  timeoutMs?: number;
  /** Events waiting beyond this are dropped, with a warning (default 1000). */
  maxPending?: number;
}

/**
 * Delivers events to EVENTS_WEBHOOK_URL, signed, in the background: a 2xx is delivered; a network
 * error, a timeout, a 408, a 429 or a 5xx is tried again with exponential back-off, a bounded
 * number of times; any other answer is final.
 */
export function createWebhook(options: WebhookOptions): EventSink {
  const attempts = options.attempts ?? 6;
  const backoffMs = options.backoffMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? 5000;
  const maxPending = options.maxPending ?? 1000;
  const { log } = options;
  const pending = new Set<Promise<void>>();

  async function deliver(body: string, type: string, id: string): Promise<void> {
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const timestamp = String(Math.floor(options.now() / 1000));
      let outcome: string;
      try {
        const response = await options.fetch(options.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            [TIMESTAMP_HEADER]: timestamp,
            [SIGNATURE_HEADER]: signEvent(options.secret, timestamp, body),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(timeoutMs),
        });
        await response.body?.cancel();
        if (response.ok) {
          log.info({ event: id, type, attempt }, 'event delivered');
          return;
        }
        const retriable =
          response.status === 408 || response.status === 429 || response.status >= 500;
        if (!retriable) {
          log.warn({ event: id, type, status: response.status }, 'event refused by the receiver');
          return;
        }
        outcome = `status ${response.status}`;
      } catch (error) {
        outcome = (error as Error).name;
      }
      if (attempt === attempts) {
        log.error({ event: id, type, attempts, outcome }, 'event not delivered; giving up');
        return;
      }
      log.warn({ event: id, type, attempt, outcome }, 'event not delivered; trying again');
      await options.sleep(backoffMs * 2 ** (attempt - 1));
    }
  }

  return {
    emit(event) {
      if (pending.size >= maxPending) {
        log.warn({ type: event.type }, 'too many events waiting; dropping one');
        return;
      }
      const id = randomUUID();
      const body = JSON.stringify({
        id,
        type: event.type,
        occurred_at: new Date(options.now()).toISOString(),
        connection: event.connection,
      });
      const delivery = deliver(body, event.type, id).catch((error: unknown) => {
        log.error({ err: error, event: id }, 'event delivery failed');
      });
      pending.add(delivery);
      void delivery.finally(() => pending.delete(delivery));
    },
    async idle() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}
