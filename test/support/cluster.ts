import { startSandbox, type RunningSandbox, type SandboxControl } from '@baton/sandbox';
import { randomBytes } from 'node:crypto';
import { Client, type Endpoint } from './client.ts';
import { Gate } from './gate.ts';
import type { Ledger } from './ledger.ts';
import { AttackerListener } from './listener.ts';
import { freePort } from './ports.ts';
import { BrokerProcess } from './process.ts';
import { RedisServer } from './redis.ts';
import { brokerEnv } from './broker-env.ts';
import { until } from './wait.ts';

/** The one origin the provider and the auth window know; every instance answers for it. */
export const CLUSTER_PUBLIC_URL = 'http://baton.cluster.test';
/** A second kind of allowed api_url: any one-label subdomain, https only. */
export const WILDCARD_ALLOWED = 'https://*.api.example.test';

export const encryptionKey = (): string => randomBytes(32).toString('base64');

/**
 * Three broker processes (as deployed) sharing one real Redis with `appendonly yes`, the sandbox
 * with its fault injection, an attacker listener that counts every connection, and a gate (a
 * forwarding proxy a test can hold answers in) that is an allowed api_url origin too. Every line
 * every process writes is registered with the ledger.
 */
export class Cluster {
  readonly brokers: BrokerProcess[] = [];
  readonly clientSecret = `sbx_secret_hardening-${randomBytes(16).toString('hex')}`;
  readonly keyA = encryptionKey();
  readonly keyB = encryptionKey();
  /** The environment every broker starts with (a restart may override some of it). */
  env: Record<string, string> = {};
  /** Host and path of every request the sandbox logged, kept across its resets. */
  readonly upstream: { host: string | undefined; path: string }[] = [];
  readonly #ports: number[] = [];
  readonly #ledger: Ledger;
  #started = 0;

  readonly redis: RedisServer;
  readonly sandbox: RunningSandbox;
  readonly attacker: AttackerListener;
  readonly gate: Gate;

  private constructor(
    parts: { redis: RedisServer; sandbox: RunningSandbox; attacker: AttackerListener; gate: Gate },
    ledger: Ledger,
  ) {
    this.redis = parts.redis;
    this.sandbox = parts.sandbox;
    this.attacker = parts.attacker;
    this.gate = parts.gate;
    this.#ledger = ledger;
  }

  static async start(ledger: Ledger, size = 3): Promise<Cluster> {
    const redis = await RedisServer.start({
      appendonly: true,
      // Survives a clean stop or a SIGKILL alike; "always" would fsync every rate-limit hit.
      args: ['--appendfsync', 'everysec'],
    });
    const clientId = 'baton-hardening';
    const attacker = await AttackerListener.start();
    const sandbox = await startSandbox({ control: true, clients: [] });
    const gate = await Gate.start(sandbox.url);
    const cluster = new Cluster({ redis, sandbox, attacker, gate }, ledger);
    sandbox.sandbox.control.registerClient({
      client_id: clientId,
      client_secret: cluster.clientSecret,
      redirect_uris: [`${CLUSTER_PUBLIC_URL}/auth/callback`],
    });
    // Keep what the sandbox saw before each reset, for the suite's final look at it.
    const control = sandbox.sandbox.control;
    const reset = control.reset.bind(control);
    control.reset = () => {
      cluster.upstream.push(...cluster.#seen());
      reset();
    };
    ledger.redis('cluster', redis.url);
    ledger.logs('cluster redis-server', () => redis.lines);
    ledger.secrets(() => [...sandbox.sandbox.control.secrets(), cluster.clientSecret]);
    cluster.env = brokerEnv({
      providerUrl: sandbox.url,
      publicUrl: CLUSTER_PUBLIC_URL,
      redis: { REDIS_URL: redis.url },
      alsoAllowed: [gate.origin, WILDCARD_ALLOWED],
      client: { id: clientId, secret: cluster.clientSecret },
      extra: {
        TOKEN_ENCRYPTION_KEYS: `a:${cluster.keyA}`,
        LOG_LEVEL: 'debug',
        // Short enough that a test can outlive a lease, long enough for a loaded 2-core machine.
        TOKEN_TIMEOUT_MS: '1500',
        REFRESH_LEASE_MS: '3000',
      },
    });
    for (let index = 0; index < size; index++) cluster.#ports.push(await freePort());
    await Promise.all(cluster.#ports.map((_port, index) => cluster.#launch(index)));
    return cluster;
  }

  #seen(): { host: string | undefined; path: string }[] {
    return this.control.requests().map(({ host, path }) => ({ host, path }));
  }

  /** Every request the sandbox has seen in this run, resets or not. */
  everyUpstreamRequest(): { host: string | undefined; path: string }[] {
    return [...this.upstream, ...this.#seen()];
  }

  get control(): SandboxControl {
    return this.sandbox.sandbox.control;
  }

  get endpoint(): Endpoint {
    return { publicUrl: CLUSTER_PUBLIC_URL, instances: this.brokers.map((broker) => broker.url) };
  }

  /** A client from an address of its own. */
  client(options: { connections?: number } = {}): Client {
    return new Client(this.endpoint, options);
  }

  async #launch(index: number, overrides: Record<string, string> = {}): Promise<void> {
    const broker = await BrokerProcess.start({
      ...this.env,
      ...overrides,
      PORT: String(this.#ports[index]),
    });
    this.brokers[index] = broker;
    this.#ledger.logs(`cluster broker ${index} (start ${++this.#started})`, () => broker.lines);
  }

  /** Stop instance `index` (SIGTERM, or SIGKILL) and start it again with `overrides`. */
  async restart(
    index: number,
    overrides: Record<string, string> = {},
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<void> {
    await this.brokers[index]?.stop(signal);
    await this.#launch(index, overrides);
  }

  /** A rolling restart of every instance with new settings (the new settings stay). */
  async reconfigure(overrides: Record<string, string>): Promise<void> {
    this.env = { ...this.env, ...overrides };
    await Promise.all(this.brokers.map((_broker, index) => this.restart(index)));
  }

  /** Resolves once every instance says it is ready (for after Redis comes back). */
  async ready(deadlineMs = 15_000): Promise<void> {
    await until(
      async () => {
        const answers = await Promise.all(
          this.brokers.map((broker) =>
            fetch(`${broker.url}/readyz`).then(
              (response) => response.status,
              () => 0,
            ),
          ),
        );
        return answers.every((status) => status === 200);
      },
      { deadlineMs, what: 'every broker to be ready' },
    );
  }

  async close(): Promise<void> {
    for (const broker of this.brokers) {
      broker.signal('SIGCONT');
      await broker.stop('SIGKILL');
    }
    await this.gate[Symbol.asyncDispose]();
    await this.sandbox.close();
    await this.attacker[Symbol.asyncDispose]();
    this.redis.resume();
    await this.redis[Symbol.asyncDispose]();
  }
}
