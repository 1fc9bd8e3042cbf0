import { startSandbox, type RunningSandbox, type SandboxControl } from '@baton/sandbox';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { brokerEnv, CLIENT_ID, CLIENT_SECRET } from './broker-env.ts';
import { Client, type Endpoint } from './client.ts';
import { TestClock } from './clock.ts';
import { startInProcess, type Broker } from './in-process.ts';
import { BrokerProcess } from './process.ts';
import { expectNoLeaks } from './leaks.ts';
import type { RedisServer } from './redis.ts';
import { redisStandalone, type RedisTopology } from './redis-topology.ts';
import {
  removeCertificate,
  selfSignedCertificate,
  startTlsTerminator,
  type TestCertificate,
  type TlsTerminator,
} from './tls.ts';
import { until } from './wait.ts';

export { CLIENT_ID, CLIENT_SECRET, EXTENSION_REDIRECT } from './broker-env.ts';
export type { Broker } from './in-process.ts';
export { redisCluster, redisSentinel, redisStandalone } from './redis-topology.ts';
export type { RedisTopology } from './redis-topology.ts';

interface Parts<R> {
  topology: RedisTopology<R>;
  redis: R;
  sandbox: RunningSandbox;
  providerUrl: string;
  clock: TestClock | undefined;
  tls?: { certificate: TestCertificate; terminator: TlsTerminator };
  front?: ProviderFront;
}

/** A server of the test's own in front of the sandbox (WorldOptions.front). */
export interface ProviderFront {
  /** Its address: the provider's, as brokers and browsers see it (every api_url starts with it). */
  url: string;
  close(): Promise<void>;
}

export interface WorldOptions<R> {
  /**
   * The brokers started with the world: in this process, on the world's clock (default: one), or
   * as processes (main.ts, as deployed, on the real clock), on `ports` if given. Either kind can
   * be added later (`startBroker`, `startProcess`).
   */
  brokers?: { inProcess: number } | { processes: number; ports?: readonly number[] };
  /** Default: a fresh standalone redis-server. */
  redis?: RedisTopology<R>;
  /** The sandbox behind a TLS terminator with a certificate made for the run, as production has it. */
  tls?: boolean;
  /**
   * A server in front of the sandbox (test/soak's recording proxy), started with the sandbox's own
   * address: the provider's address becomes its own, as with `tls` (not both).
   */
  front?: (sandboxUrl: string) => Promise<ProviderFront>;
  /** The one origin every broker answers for (behind a balancer). Default: each its own address. */
  publicUrl?: string;
  /** Ports of brokers started later whose callbacks the provider must accept from the start. */
  callbackPorts?: readonly number[];
  /** The sandbox's and in-process brokers' clock. Default: a fresh one for brokers in process. */
  clock?: TestClock;
  /** Where the sandbox listens, and whether a used refresh token revokes its grant. */
  sandbox?: { host?: string; port?: number; revokeOnRefreshReuse?: boolean };
  /** The integration the sandbox knows and brokers use. Default: CLIENT_ID and CLIENT_SECRET. */
  client?: { id: string; secret: string };
  /** Further api_url origins the allowlist accepts. */
  alsoAllowed?: readonly string[];
  /** null: EXTENSION_REDIRECT_URLS left to its development default (the built extension's ids). */
  extensionRedirectUrls?: string | null;
  /** Every broker's environment, over the world's. */
  env?: Record<string, string>;
  /** Prometheus metrics in in-process brokers (served at /metrics when METRICS_TOKEN is set). */
  metrics?: boolean;
  /** Told of every broker started, with its log (a ledger registers them). */
  onStart?: (name: string, lines: () => readonly string[]) => void;
}

/**
 * The system under test, all real but the provider: a Redis, the sandbox, brokers in this process
 * or as processes. The one way the test suites start it (startWorld, or useWorld for a file).
 */
export class World<R = RedisServer> {
  readonly redis: R;
  readonly sandbox: RunningSandbox;
  /** The provider's address as brokers see it: the sandbox, or the TLS terminator before it. */
  readonly providerUrl: string;
  readonly brokers: Broker[] = [];
  readonly processes: BrokerProcess[] = [];
  readonly options: WorldOptions<R>;
  private readonly parts: Parts<R>;
  /** Each process's environment and entry point as started, for a restart. */
  private readonly launched: { env: Record<string, string>; main: string | undefined }[] = [];
  private shared: Record<string, string>;
  private started = 0;

  constructor(options: WorldOptions<R>, parts: Parts<R>) {
    this.options = options;
    this.redis = parts.redis;
    this.sandbox = parts.sandbox;
    this.providerUrl = parts.providerUrl;
    this.parts = parts;
    // Brokers on the real clock make thousands of calls with one session (broker-env.ts).
    this.shared = this.compose({}, !('inProcess' in (options.brokers ?? { inProcess: 1 })));
  }

  /** The injected clock; a world on the real clock has none. */
  get clock(): TestClock {
    if (!this.parts.clock) throw new Error('this world runs on the real clock');
    return this.parts.clock;
  }

  /** The TLS terminator before the sandbox, and the throwaway certificate it presents. */
  get tls(): { certificate: TestCertificate; terminator: TlsTerminator } {
    if (!this.parts.tls) throw new Error('this world has no TLS in front of the provider');
    return this.parts.tls;
  }

  /** The first in-process broker, for a world of one. */
  get broker(): Broker {
    const [broker] = this.brokers;
    if (!broker) throw new Error('this world has no broker in process');
    return broker;
  }

  get control(): SandboxControl {
    return this.sandbox.sandbox.control;
  }

  /** The environment the world's brokers share (what an admin CLI beside them would get). */
  get env(): Record<string, string> {
    return this.shared;
  }

  /**
   * The environment of a broker process the test starts and stops itself (BrokerProcess): the
   * world's provider, Redis and client, with secrets of its own, then `extra`.
   */
  freshEnv(extra: Record<string, string> = {}): Record<string, string> {
    return this.compose(extra, true);
  }

  private compose(extra: Record<string, string>, realClock: boolean): Record<string, string> {
    const { options } = this;
    return brokerEnv({
      providerUrl: this.providerUrl,
      publicUrl: options.publicUrl,
      redis: this.parts.topology.env(this.redis),
      realClock,
      ...(options.alsoAllowed ? { alsoAllowed: options.alsoAllowed } : {}),
      ...(options.client ? { client: options.client } : {}),
      ...(options.extensionRedirectUrls === undefined
        ? {}
        : { extensionRedirectUrls: options.extensionRedirectUrls }),
      extra: {
        ...(this.parts.tls ? { NODE_EXTRA_CA_CERTS: this.parts.tls.certificate.certFile } : {}),
        ...options.env,
        ...extra,
      },
    });
  }

  /** Every broker, in process and process, behind the world's public origin. */
  get endpoint(): Endpoint {
    const instances = [...this.brokers, ...this.processes].map((broker) => broker.url);
    return { publicUrl: this.options.publicUrl ?? instances[0] ?? '', instances };
  }

  /** A client from an address of its own. */
  client(options: { connections?: number } = {}): Client {
    return new Client(this.endpoint, options);
  }

  /** One more broker in this process, on the world's clock, with `extra` over the environment. */
  async startBroker(extra: Record<string, string> = {}): Promise<Broker> {
    const broker = await startInProcess(
      { LOG_LEVEL: 'debug', ...this.shared, ...extra },
      { now: this.parts.clock?.now ?? Date.now, metrics: this.options.metrics ?? false },
    );
    this.brokers.push(broker);
    this.options.onStart?.(`broker ${this.started++} (in process)`, () => broker.logs.lines);
    return broker;
  }

  /** One more broker process (`main`: another revision's entry point), `extra` over the environment. */
  async startProcess(extra: Record<string, string> = {}, main?: string): Promise<BrokerProcess> {
    const env = { ...this.shared, ...extra };
    return this.launch(this.launched.push({ env, main }) - 1);
  }

  /**
   * Stops process `index` (if it runs) and starts it again on its port, with `overrides` for this
   * start only.
   */
  async restartProcess(
    index: number,
    overrides: Record<string, string> = {},
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<BrokerProcess> {
    await this.processes[index]?.stop(signal);
    return this.launch(index, overrides);
  }

  /** A rolling restart of every process with new settings, which stay for brokers started later. */
  async reconfigure(overrides: Record<string, string>): Promise<void> {
    this.shared = { ...this.shared, ...overrides };
    for (const launched of this.launched) launched.env = { ...launched.env, ...overrides };
    await Promise.all(this.processes.map((_broker, index) => this.restartProcess(index)));
  }

  /** Resolves once every process answers /readyz with 200 (after Redis comes back, say). */
  async ready(deadlineMs = 15_000): Promise<void> {
    await until(
      async () => {
        const statuses = await Promise.all(
          this.processes.map((broker) =>
            fetch(`${broker.url}/readyz`).then(
              (response) => response.status,
              () => 0,
            ),
          ),
        );
        return statuses.every((status) => status === 200);
      },
      { deadlineMs, what: 'every broker to be ready' },
    );
  }

  async close(): Promise<void> {
    for (const broker of this.brokers) await broker.close();
    for (const broker of this.processes) {
      broker.signal('SIGCONT');
      await broker.stop('SIGKILL');
    }
    await this.parts.tls?.terminator.close();
    await this.parts.front?.close();
    await this.sandbox.close();
    if (this.parts.tls) await removeCertificate(this.parts.tls.certificate);
    await this.parts.topology.stop(this.redis);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Starts process `index` as `launched` says, keeping its port for a restart. */
  private async launch(index: number, overrides: Record<string, string> = {}) {
    const launched = this.launched[index]!;
    const broker = await BrokerProcess.start({ ...launched.env, ...overrides }, launched.main);
    this.processes[index] = broker;
    launched.env = { ...launched.env, PORT: new URL(broker.url).port };
    this.options.onStart?.(`broker ${index} (start ${++this.started})`, () => broker.lines);
    return broker;
  }
}

/** Starts a world (see WorldOptions); `close` or `await using` stops every part of it. */
export async function startWorld<R = RedisServer>(
  options: WorldOptions<R> = {},
): Promise<World<R>> {
  const brokers = options.brokers ?? { inProcess: 1 };
  const inProcess = 'inProcess' in brokers;
  const clock = options.clock ?? (inProcess ? new TestClock() : undefined);
  if (options.tls && options.front) throw new Error('a world has TLS or a front, not both');
  const topology = (options.redis ?? redisStandalone()) as RedisTopology<R>;
  const redis = await topology.start();
  let sandboxUrl = '';
  const sandbox = await startSandbox({
    control: true,
    clients: [],
    ...options.sandbox,
    ...(clock ? { now: clock.now } : {}),
    ...(options.tls || options.front ? { publicUrl: () => sandboxUrl } : {}),
  });
  const front = await options.front?.(sandbox.url);
  if (front) sandboxUrl = front.url;
  let tls: { certificate: TestCertificate; terminator: TlsTerminator } | undefined;
  if (options.tls) {
    const certificate = await selfSignedCertificate();
    tls = { certificate, terminator: await startTlsTerminator(certificate, sandbox.port) };
    sandboxUrl = tls.terminator.url;
  }
  const world = new World(options, {
    topology,
    clock,
    redis,
    sandbox,
    providerUrl: tls?.terminator.url ?? front?.url ?? sandbox.url,
    ...(tls ? { tls } : {}),
    ...(front ? { front } : {}),
  });
  try {
    if (inProcess) for (let i = 0; i < brokers.inProcess; i++) await world.startBroker();
    else
      await Promise.all(
        Array.from({ length: brokers.processes }, (_none, index) => {
          const port = brokers.ports?.[index];
          return world.startProcess(port === undefined ? {} : { PORT: String(port) });
        }),
      );
  } catch (error) {
    await world.close();
    throw error;
  }
  // The test integration, its callback at the public origin, or at each broker's own and the
  // ports of brokers to come (a broker started later elsewhere is one the provider does not know).
  const origins = options.publicUrl
    ? [options.publicUrl]
    : [
        ...world.endpoint.instances,
        ...(options.callbackPorts ?? []).map((port) => `http://127.0.0.1:${port}`),
      ];
  if (origins.length > 0)
    world.control.registerClient({
      client_id: options.client?.id ?? CLIENT_ID,
      client_secret: options.client?.secret ?? CLIENT_SECRET,
      redirect_uris: origins.map((origin) => `${origin}/auth/callback`),
    });
  return world;
}

export interface SuiteChecks {
  /** Before each test: the sandbox's counters, request log and faults reset. */
  resetSandbox?: boolean;
  /** After the file: no secret the sandbox knows in Redis or an in-process broker's log. */
  expectNoLeaks?: boolean;
}

/**
 * One world for a test file: started before its tests and stopped after them. What it returns
 * stands for the world once started (reading it before then throws).
 */
export function useWorld<R = RedisServer>(
  options: WorldOptions<R> = {},
  checks: SuiteChecks = {},
): World<R> {
  let world: World<R> | undefined;
  beforeAll(async () => {
    world = await startWorld(options);
  });
  afterAll(async () => {
    if (!world) return;
    try {
      // Checked where Redis is one server (a URL to read it all from).
      if (checks.expectNoLeaks) await expectNoLeaks(world as unknown as World<{ url: string }>);
    } finally {
      await world.close();
    }
  });
  if (checks.resetSandbox) beforeEach(() => world?.control.reset());
  return new Proxy({} as World<R>, {
    get(_target, key) {
      if (!world) throw new Error('the world is not started yet: use it in a hook or a test');
      const value: unknown = Reflect.get(world, key);
      return typeof value === 'function' ? (value as () => unknown).bind(world) : value;
    },
  });
}
