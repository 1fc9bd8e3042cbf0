import { startSandbox, type RunningSandbox, type SandboxControl } from '@baton/sandbox';
import { Client, type Endpoint } from './client.ts';
import { TestClock } from './clock.ts';
import type { Ledger } from './ledger.ts';
import { RedisServer } from './redis.ts';
import { CLIENT_ID, CLIENT_SECRET, startBroker, type Broker } from './stack.ts';

export const TRIO_PUBLIC_URL = 'http://baton.trio.test';

/**
 * Three brokers in this process, each with its own Redis client and its own in-process single
 * flight (so only Redis coordinates them, as between processes), over one real Redis, with the
 * sandbox: all on one injected clock, for what must be decided by time without waiting for it.
 */
export class Trio {
  readonly clock: TestClock;
  readonly redis: RedisServer;
  readonly sandbox: RunningSandbox;
  readonly brokers: Broker[];

  private constructor(parts: {
    clock: TestClock;
    redis: RedisServer;
    sandbox: RunningSandbox;
    brokers: Broker[];
  }) {
    this.clock = parts.clock;
    this.redis = parts.redis;
    this.sandbox = parts.sandbox;
    this.brokers = parts.brokers;
  }

  static async start(
    ledger: Ledger,
    options: { tokenTimeoutMs: number; refreshLeaseMs: number },
  ): Promise<Trio> {
    const clock = new TestClock();
    const redis = await RedisServer.start();
    const sandbox = await startSandbox({
      control: true,
      now: clock.now,
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${TRIO_PUBLIC_URL}/auth/callback`],
        },
      ],
    });
    const brokers = await Promise.all(
      [0, 1, 2].map(() =>
        startBroker({
          redis,
          sandbox,
          clock,
          env: {
            PUBLIC_URL: TRIO_PUBLIC_URL,
            TOKEN_TIMEOUT_MS: String(options.tokenTimeoutMs),
            REFRESH_LEASE_MS: String(options.refreshLeaseMs),
          },
        }),
      ),
    );
    brokers.forEach((broker, index) =>
      ledger.logs(`trio broker ${index}`, () => broker.logs.lines),
    );
    ledger.logs('trio redis-server', () => redis.lines);
    ledger.redis('trio', redis.url);
    ledger.secrets(() => [...sandbox.sandbox.control.secrets(), CLIENT_SECRET]);
    return new Trio({ clock, redis, sandbox, brokers });
  }

  get control(): SandboxControl {
    return this.sandbox.sandbox.control;
  }

  get endpoint(): Endpoint {
    return { publicUrl: TRIO_PUBLIC_URL, instances: this.brokers.map((broker) => broker.url) };
  }

  client(): Client {
    return new Client(this.endpoint);
  }

  async close(): Promise<void> {
    for (const broker of this.brokers) await broker.close();
    await this.sandbox.close();
    await this.redis[Symbol.asyncDispose]();
  }
}
