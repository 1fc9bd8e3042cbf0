import type { RunningSandbox, SandboxControl } from '@baton/sandbox';
import { randomBytes } from 'node:crypto';
import type { Client, Endpoint } from '../support/client.ts';
import { Gate } from '../support/gate.ts';
import type { Ledger } from '../support/ledger.ts';
import { AttackerListener } from '../support/listener.ts';
import type { BrokerProcess } from '../support/process.ts';
import type { RedisServer } from '../support/redis.ts';
import { CLIENT_SECRET, redisStandalone, startWorld, type World } from '../support/world.ts';

/** The one origin the provider and the auth window know; every instance answers for it. */
export const CLUSTER_PUBLIC_URL = 'http://baton.cluster.test';
/** A second kind of allowed api_url: any one-label subdomain, https only. */
export const WILDCARD_ALLOWED = 'https://*.api.example.test';

const encryptionKey = (): string => randomBytes(32).toString('base64');

/**
 * A world of three broker processes (as deployed) sharing one real Redis with `appendonly yes`,
 * plus what the hardening suite attacks it with: an attacker listener that counts every
 * connection, and a gate (a forwarding proxy a test can hold answers in) that is an allowed
 * api_url origin too. Every line every process writes is registered with the ledger.
 */
export class Cluster {
  readonly keyA: string;
  readonly keyB = encryptionKey();
  /** Host and path of every request the sandbox logged, kept across its resets. */
  readonly upstream: { host: string | undefined; path: string }[] = [];
  readonly world: World;
  readonly attacker: AttackerListener;
  readonly gate: Gate;

  private constructor(world: World, attacker: AttackerListener, gate: Gate, keyA: string) {
    this.world = world;
    this.keyA = keyA;
    this.attacker = attacker;
    this.gate = gate;
  }

  static async start(ledger: Ledger, size = 3): Promise<Cluster> {
    const keyA = encryptionKey();
    const world = await startWorld({
      brokers: { processes: 0 },
      // Survives a clean stop or a SIGKILL alike; "always" would fsync every rate-limit hit.
      redis: redisStandalone({ appendonly: true, args: ['--appendfsync', 'everysec'] }),
      publicUrl: CLUSTER_PUBLIC_URL,
      env: {
        TOKEN_ENCRYPTION_KEYS: `a:${keyA}`,
        LOG_LEVEL: 'debug',
        // Short enough that a test can outlive a lease, long enough for a loaded 2-core machine.
        TOKEN_TIMEOUT_MS: '1500',
        REFRESH_LEASE_MS: '3000',
      },
      onStart: (name, lines) => ledger.logs(`cluster ${name}`, lines),
    });
    const attacker = await AttackerListener.start();
    const gate = await Gate.start(world.sandbox.url);
    const cluster = new Cluster(world, attacker, gate, keyA);
    // Keep what the sandbox saw before each reset, for the suite's final look at it.
    const { control } = world;
    const reset = control.reset.bind(control);
    control.reset = () => {
      cluster.upstream.push(...cluster.#seen());
      reset();
    };
    ledger.redis('cluster', world.redis.url);
    ledger.logs('cluster redis-server', () => world.redis.lines);
    ledger.secrets(() => [...control.secrets(), CLIENT_SECRET]);
    // The gate is an allowed origin too, and so is any subdomain of the wildcard.
    await world.reconfigure({
      API_URL_ALLOWLIST: [world.providerUrl, gate.origin, WILDCARD_ALLOWED].join(','),
    });
    await Promise.all(Array.from({ length: size }, () => world.startProcess()));
    return cluster;
  }

  #seen(): { host: string | undefined; path: string }[] {
    return this.control.requests().map(({ host, path }) => ({ host, path }));
  }

  /** Every request the sandbox has seen in this run, resets or not. */
  everyUpstreamRequest(): { host: string | undefined; path: string }[] {
    return [...this.upstream, ...this.#seen()];
  }

  get redis(): RedisServer {
    return this.world.redis;
  }

  get sandbox(): RunningSandbox {
    return this.world.sandbox;
  }

  get control(): SandboxControl {
    return this.world.control;
  }

  get brokers(): readonly BrokerProcess[] {
    return this.world.processes;
  }

  /** The environment every broker starts with (a restart may override some of it). */
  get env(): Record<string, string> {
    return this.world.env;
  }

  get endpoint(): Endpoint {
    return this.world.endpoint;
  }

  /** A client from an address of its own. */
  client(options: { connections?: number } = {}): Client {
    return this.world.client(options);
  }

  /** Stop instance `index` (SIGTERM, or SIGKILL) and start it again with `overrides`. */
  async restart(
    index: number,
    overrides: Record<string, string> = {},
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<void> {
    await this.world.restartProcess(index, overrides, signal);
  }

  /** A rolling restart of every instance with new settings (the new settings stay). */
  async reconfigure(overrides: Record<string, string>): Promise<void> {
    await this.world.reconfigure(overrides);
  }

  /** Resolves once every instance says it is ready (for after Redis comes back). */
  async ready(deadlineMs = 15_000): Promise<void> {
    await this.world.ready(deadlineMs);
  }

  async close(): Promise<void> {
    await this.gate[Symbol.asyncDispose]();
    await this.attacker[Symbol.asyncDispose]();
    await this.world.close();
  }
}
