import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startReceiver, type Receiver } from '../support/receiver.ts';

/** One delivery attempt as the receiver got it (the same event may come more than once). */
export interface Delivery {
  /** On the soak's clock, ms. */
  at: number;
  id: string;
  /** Checked with the `standardwebhooks` library against the secret, as docs/events.md says. */
  verified: boolean;
  type: string;
  /** The event's own `timestamp`: when the change happened, on its broker's clock. */
  timestamp: string;
  sessionRef: string;
  connection?: string;
  /** A disconnection's reason, or a session's end's. */
  reason?: string;
  /** session.ended: the connections it still held. */
  connections?: string[];
  /** SHA-256 of the body: the same id must always come with the same body. */
  bodyHash: string;
}

interface Payload {
  type: string;
  timestamp: string;
  data: {
    session: { ref: string; reason?: string };
    connection?: { id: string; reason?: string };
    connections?: string[];
  };
}

/**
 * The integrator's webhook receiver (docs/events.md): verifies every delivery with a Standard
 * Webhooks library, keeps every attempt in the order they came, and answers 204. While `down`,
 * it resets each connection without an answer, as a receiver that is not there.
 */
export class EventLog {
  readonly deliveries: Delivery[] = [];
  readonly #webhook: Webhook;
  readonly #now: () => number;
  #receiver: Receiver | undefined;
  down = false;

  private constructor(secret: string, now: () => number) {
    this.#webhook = new Webhook(secret);
    this.#now = now;
  }

  static async start(options: { secret: string; now: () => number }): Promise<EventLog> {
    const log = new EventLog(options.secret, options.now);
    log.#receiver = await startReceiver((req, body, res) => {
      if (log.down) {
        req.socket.destroy();
        return;
      }
      const verified = log.#record(req.headers, body);
      res.writeHead(verified ? 204 : 400).end();
    });
    return log;
  }

  /** Where the brokers POST (EVENTS_WEBHOOK_URL). */
  get url(): string {
    return `${this.#receiver?.origin ?? ''}/hooks/baton`;
  }

  #record(headers: IncomingHttpHeaders, body: string): boolean {
    let payload: Payload;
    let verified = true;
    try {
      payload = this.#webhook.verify(body, headers as Record<string, string>) as Payload;
    } catch {
      verified = false;
      try {
        payload = JSON.parse(body) as Payload;
      } catch {
        return false;
      }
    }
    const { data } = payload;
    const reason = data.connection?.reason ?? data.session.reason;
    this.deliveries.push({
      at: this.#now(),
      id: String(headers['webhook-id']),
      verified,
      type: payload.type,
      timestamp: payload.timestamp,
      sessionRef: data.session.ref,
      ...(data.connection ? { connection: data.connection.id } : {}),
      ...(reason === undefined ? {} : { reason }),
      ...(data.connections ? { connections: data.connections } : {}),
      bodyHash: createHash('sha256').update(body).digest('base64url'),
    });
    return verified;
  }

  async close(): Promise<void> {
    await this.#receiver?.close();
  }
}
