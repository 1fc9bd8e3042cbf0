import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from '@baton/server';
import { startInProcess } from '../support/in-process.ts';
import type { BrokerProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';
import { startWorld, type World } from '../support/world.ts';
import { EventLog } from './event-log.ts';
import type { BrokerLife, FailedStart, History, LogLine, PauseRecord } from './history.ts';
import { ProviderTap } from './provider-tap.ts';
import type { SoakRedis, TopologyName } from './soak-redis.ts';
import { soakTopology } from './topologies.ts';

const CLOCK_HOOK = fileURLToPath(new URL('./clock-hook.ts', import.meta.url));

/** The one origin the provider and the browsers know; every instance answers for it. */
export const SOAK_PUBLIC_URL = 'http://baton.soak.test';

export interface SystemOptions {
  topology: TopologyName;
  /** Broker processes (default 3). */
  instances?: number;
  /** The provider's access token lifetime, seconds (the tap's). */
  lifetimeS: number;
  /** Every broker's environment, over the soak's. */
  env?: Record<string, string>;
  /**
   * The brokers in this process instead (test/support/in-process.ts), each with its store
   * wrapped: how the checker's own tests plant a defect (planted.test.ts). No broker faults then.
   */
  inProcess?: { wrapStore: (store: Store) => Store };
}

/**
 * The broker's environment in the soak: as the topology suite sizes the refresh (a 1.5 s token
 * timeout, a lease that outlasts a failover), refreshes due half way through the tap's short
 * token lifetime, events to the receiver, and a proxy bound well under the users' patience.
 */
export function soakEnv(options: { lifetimeS: number; leaseMs: number }): Record<string, string> {
  return {
    TOKEN_TIMEOUT_MS: '1500',
    REFRESH_LEASE_MS: String(options.leaseMs),
    REFRESH_AHEAD_SECONDS: String(Math.floor(options.lifetimeS / 2)),
    PROXY_TIMEOUT_MS: '5000',
    // The users give up at 20 s: two waits for a token, and two calls upstream, stay under it.
    TOKEN_WAIT_MS: '8000',
    SHUTDOWN_TIMEOUT_MS: '5000',
    LOG_LEVEL: 'info',
  };
}

export const LEASE_MS = 6500;

/**
 * The system under test, all real but the provider: three broker processes (server/src/main.ts,
 * each preloaded with the clock hook), a Redis topology behind the soak's proxies, the sandbox
 * behind the provider tap, and the Standard Webhooks receiver. world.ts starts and stops most of
 * it; this keeps each broker's lives and pauses for the history.
 */
export class SoakSystem {
  readonly world: World<SoakRedis>;
  readonly tap: ProviderTap;
  readonly events: EventLog;
  readonly now: () => number;
  readonly lives: BrokerLife[] = [];
  readonly pauses: PauseRecord[] = [];
  /** Starts of a broker that exited instead of listening (started again a second later). */
  readonly failedStarts: FailedStart[] = [];
  readonly #logs: { instance: number; pid: number; lines: () => readonly string[] }[] = [];
  readonly #clockDir: string;
  /** Each instance's offset from the real clock, ms. */
  readonly clockOffsets: number[] = [];

  private constructor(
    world: World<SoakRedis>,
    tap: ProviderTap,
    events: EventLog,
    now: () => number,
    clockDir: string,
  ) {
    this.world = world;
    this.tap = tap;
    this.events = events;
    this.now = now;
    this.#clockDir = clockDir;
  }

  static async start(options: SystemOptions, now: () => number): Promise<SoakSystem> {
    const instances = options.instances ?? 3;
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const events = await EventLog.start({ secret, now });
    const clockDir = await mkdtemp(join(tmpdir(), 'baton-soak-clock-'));
    let tap: ProviderTap | undefined;
    // Set once the world is up: the tap and world.ts ask for it earlier, and get nothing yet.
    const made: { system?: SoakSystem } = {};
    const world = await startWorld<SoakRedis>({
      brokers: { processes: 0 },
      redis: soakTopology(options.topology),
      publicUrl: SOAK_PUBLIC_URL,
      front: async (sandboxUrl) => {
        tap = await ProviderTap.start({
          target: sandboxUrl,
          now,
          lifetimeS: options.lifetimeS,
          pids: () => made.system?.pids() ?? [],
        });
        return tap;
      },
      env: {
        ...soakEnv({ lifetimeS: options.lifetimeS, leaseMs: LEASE_MS }),
        EVENTS_WEBHOOK_URL: events.url,
        EVENTS_WEBHOOK_SECRET: secret,
        NODE_OPTIONS: `--import ${CLOCK_HOOK}`,
        ...options.env,
      },
      // world.ts names each start `broker <index> (start <n>)`.
      onStart: (name, lines) => {
        const system = made.system;
        if (system) system.#started(Number(/^broker (\d+)/.exec(name)?.[1]), lines);
      },
    });
    const system = new SoakSystem(world, tap!, events, now, clockDir);
    made.system = system;
    try {
      if (options.inProcess) {
        for (let index = 0; index < instances; index++) {
          const broker = await startInProcess(world.env, {
            now: Date.now,
            wrapStore: options.inProcess.wrapStore,
          });
          world.brokers.push(broker);
          system.lives.push({ instance: index, pid: process.pid, started: now() });
          system.#logs.push({ instance: index, pid: process.pid, lines: () => broker.logs.lines });
        }
        return system;
      }
      for (let index = 0; index < instances; index++) {
        system.clockOffsets.push(0);
        await writeFile(system.#clockFile(index), '0');
      }
      // Started together (world.ts gives each its index as it is called), recorded in order.
      await Promise.all(
        Array.from({ length: instances }, (_, index) =>
          world.startProcess({ SOAK_CLOCK_FILE: system.#clockFile(index) }),
        ),
      );
      for (let index = 0; index < instances; index++) system.#record(index);
    } catch (error) {
      await system.close();
      throw error;
    }
    return system;
  }

  #clockFile(index: number): string {
    return join(this.#clockDir, `broker-${index}.offset`);
  }

  /** Each instance's latest process's log, as world.ts reports it started. */
  readonly #latestLines = new Map<number, () => readonly string[]>();

  #started(index: number, lines: () => readonly string[]): void {
    this.#latestLines.set(index, lines);
  }

  /** A process of instance `index` has just started: its life and its log. */
  #record(index: number): void {
    const broker = this.world.processes[index]!;
    this.lives.push({ instance: index, pid: broker.pid, started: this.now() });
    const lines = this.#latestLines.get(index) ?? (() => broker.lines);
    this.#logs.push({ instance: index, pid: broker.pid, lines });
  }

  get instances(): number {
    return this.world.endpoint.instances.length;
  }

  get redis(): SoakRedis {
    return this.world.redis;
  }

  process(index: number): BrokerProcess {
    return this.world.processes[index]!;
  }

  /** The pids of the broker processes running now. */
  pids(): number[] {
    return this.lives.filter((life) => life.ended === undefined).map((life) => life.pid);
  }

  #life(index: number): BrokerLife | undefined {
    return this.lives.findLast((life) => life.instance === index && life.ended === undefined);
  }

  /** Instance `index` stops: SIGKILL at once, or SIGTERM and its drain. Resolves once it exited. */
  async stop(index: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const life = this.#life(index);
    this.resume(index);
    if (life) life.stopping = this.now();
    if (signal === 'SIGKILL' && life) {
      // The life ends at the signal: what it does not get to write is lost from then on.
      life.ended = this.now();
      life.how = signal;
    }
    await this.process(index).stop(signal);
    if (life && life.ended === undefined) {
      life.ended = this.now();
      life.how = signal;
    }
  }

  /** Instance `index` starts again (same port, same environment); resolves once it listens. */
  async start(index: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.world.restartProcess(index);
        break;
      } catch (error) {
        // A broker that exits while starting (its log in the error) is a finding, and the run goes
        // on: it is started again, as an orchestrator would, a second later.
        const reason = String(error)
          .split('\n')
          .filter((line) => /"level":[56]0|Error/.test(line));
        this.failedStarts.push({
          instance: index,
          at: this.now(),
          reason: reason.slice(-3).join(' | '),
        });
        if (attempt >= 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    this.#record(index);
    if (this.clockOffsets[index] !== 0) await this.setClockOffset(index, this.clockOffsets[index]!);
  }

  /** SIGSTOP: the process holds its connections and answers nothing. */
  pause(index: number): void {
    const life = this.#life(index);
    if (!life || this.pauses.some((pause) => pause.pid === life.pid && pause.to === undefined))
      return;
    this.process(index).signal('SIGSTOP');
    this.pauses.push({ instance: index, pid: life.pid, from: this.now() });
  }

  resume(index: number): void {
    const life = this.#life(index);
    const pause = this.pauses.find((each) => each.pid === life?.pid && each.to === undefined);
    if (!pause) return;
    this.process(index).signal('SIGCONT');
    pause.to = this.now();
  }

  /** Instance `index`'s wall clock, `ms` off the real one from now on (clock-hook.ts). */
  async setClockOffset(index: number, ms: number): Promise<void> {
    this.clockOffsets[index] = ms;
    await writeFile(this.#clockFile(index), String(ms));
    this.process(index).signal('SIGUSR2');
  }

  /** Resolves once every instance answers /readyz with 200. */
  async ready(deadlineMs = 60_000): Promise<void> {
    await this.world.ready(deadlineMs);
  }

  /** Resolves once instance `index` answers /readyz with 200. */
  async readyOne(index: number, deadlineMs = 60_000): Promise<void> {
    const url = `${this.process(index).url}/readyz`;
    await until(
      async () =>
        (await fetch(url)
          .then((response) => response.status)
          .catch(() => 0)) === 200,
      { deadlineMs, intervalMs: 100, what: `instance ${index} to be ready` },
    );
  }

  /** Every broker's log lines, each life's. */
  logLines(): LogLine[] {
    return this.#logs.flatMap(({ instance, pid, lines }) =>
      lines().map((line) => ({ instance, pid, line })),
    );
  }

  /** What the system itself adds to the history. */
  fill(history: History): void {
    history.lives = this.lives;
    history.pauses = this.pauses;
    history.failedStarts = this.failedStarts;
    history.tokens = this.tap.tokens;
    history.api = this.tap.api;
    history.deliveries = this.events.deliveries;
    history.logs = this.logLines();
  }

  async close(): Promise<void> {
    for (let index = 0; index < this.instances; index++) this.resume(index);
    await this.world.close();
    await this.events.close();
    await rm(this.#clockDir, { recursive: true, force: true });
  }
}
