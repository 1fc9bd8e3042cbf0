/**
 * The soak's fault kinds: what each breaks (a broker, Redis, the provider, the webhook receiver),
 * for how long, on which topologies, and how it is healed. nemesis.ts schedules and runs them.
 */
import type { Fault } from '@baton/sandbox';
import type { FaultRecord } from './history.ts';
import type { Random } from './random.ts';
import type { SoakSystem } from './system.ts';
import type { TopologyName } from './soak-redis.ts';

/** Where a fault strikes: at most one fault of each domain at a time, several domains at once. */
export type Domain = 'broker' | 'redis' | 'provider' | 'receiver';

interface Context {
  system: SoakSystem;
  random: Random;
  record: FaultRecord;
  /** The fault's hold, drawn for it. */
  holdMs: number;
}

/** Heals what `inject` did; resolves once the part is healthy again. */
export type Heal = () => Promise<void>;

export interface FaultKind {
  name: string;
  domain: Domain;
  /** How long the fault lasts before its heal, ms. */
  hold: (random: Random, topology: TopologyName) => number;
  /** Whether it exists on this topology (no replica on a standalone Redis). */
  on?: (topology: TopologyName) => boolean;
  inject(context: Context): Promise<Heal>;
}

const between = (min: number, max: number) => (random: Random) => random.between(min, max);

/** The lease the brokers run with (system.ts): a pause "past the lease" is longer. */
const LEASE_MS = 6500;

/** A broker other than one already down: the domain rule keeps at most one broker fault at once. */
const anyInstance = (context: Context): number => context.random.int(context.system.instances);

/** Instance of a process id, or undefined when it is not one of the running brokers'. */
function instanceOf(system: SoakSystem, pid: number | undefined): number | undefined {
  return system.lives.find((life) => life.pid === pid && life.ended === undefined)?.instance;
}

/**
 * Waits for the tap to see a refresh at `stage` and runs `act` on its broker there (killing or
 * pausing it mid-refresh); after `deadlineMs` without one, `act` runs on a random instance.
 */
async function atRefresh(
  context: Context,
  stage: 'request' | 'answer',
  act: (instance: number) => Promise<void>,
  deadlineMs = 15_000,
): Promise<number> {
  const { system } = context;
  let chosen: number | undefined;
  const fired = new Promise<void>((resolve) =>
    system.tap.intercept(stage, async (request) => {
      chosen = instanceOf(system, request.pid);
      if (chosen !== undefined) await act(chosen);
      resolve();
    }),
  );
  const timer = new Promise<'late'>((resolve) =>
    setTimeout(() => resolve('late'), deadlineMs).unref(),
  );
  if ((await Promise.race([fired, timer])) === 'late' || chosen === undefined) {
    system.tap.clearIntercepts();
    chosen ??= anyInstance(context);
    context.record.note = `${context.record.note ?? ''} (no refresh came: a random instance)`;
    await act(chosen);
  }
  return chosen;
}

const restartInstance =
  (system: SoakSystem, instance: number): Heal =>
  async () => {
    await system.start(instance);
    await system.readyOne(instance);
  };

/** A sandbox fault until healed (the sandbox clears them all: one provider fault at a time). */
function sandboxFault(fault: Fault, note: string): FaultKind['inject'] {
  return async ({ system, record }) => {
    system.world.control.addFault(fault);
    record.target = 'provider';
    record.note = note;
    return async () => system.world.control.clearFaults();
  };
}

export const FAULT_KINDS: readonly FaultKind[] = [
  {
    name: 'broker-kill',
    domain: 'broker',
    hold: between(1000, 5000),
    async inject(context) {
      const instance = anyInstance(context);
      context.record.instance = instance;
      context.record.target = `broker ${instance}`;
      await context.system.stop(instance, 'SIGKILL');
      return restartInstance(context.system, instance);
    },
  },
  {
    name: 'broker-kill-in-refresh',
    domain: 'broker',
    hold: between(1000, 4000),
    async inject(context) {
      const stage = context.random.pick(['request', 'answer'] as const);
      context.record.note = `killed at the refresh's ${stage === 'request' ? 'request, before the provider saw it' : 'answer, once the provider had rotated'}`;
      const instance = await atRefresh(context, stage, (chosen) =>
        context.system.stop(chosen, 'SIGKILL'),
      );
      context.record.instance = instance;
      context.record.target = `broker ${instance}`;
      return restartInstance(context.system, instance);
    },
  },
  {
    name: 'broker-pause',
    domain: 'broker',
    // Past the refresh lease: another instance may take the lock meanwhile.
    hold: between(LEASE_MS + 1000, LEASE_MS + 3500),
    async inject(context) {
      const { system } = context;
      const holder = context.random.chance(0.5);
      context.record.note = holder
        ? "paused holding a refresh's answer (between the provider's answer and its read)"
        : 'paused';
      const instance = holder
        ? await atRefresh(context, 'answer', async (chosen) => system.pause(chosen))
        : anyInstance(context);
      if (!holder) system.pause(instance);
      context.record.instance = instance;
      context.record.target = `broker ${instance}`;
      return async () => system.resume(instance);
    },
  },
  {
    name: 'broker-rolling-restart',
    domain: 'broker',
    hold: () => 0,
    async inject(context) {
      const { system } = context;
      context.record.target = 'every broker, one at a time';
      context.record.note = 'SIGTERM with calls in flight, then started again';
      for (let instance = 0; instance < system.instances; instance++) {
        await system.stop(instance, 'SIGTERM');
        await system.start(instance);
        await system.readyOne(instance);
      }
      return async () => {};
    },
  },
  {
    name: 'broker-clock-jump',
    domain: 'broker',
    hold: between(8000, 20_000),
    async inject(context) {
      const instance = anyInstance(context);
      const offset = (context.random.chance(0.5) ? 1 : -1) * context.random.between(20, 50) * 1000;
      context.record.instance = instance;
      context.record.target = `broker ${instance}`;
      context.record.note = `wall clock ${offset > 0 ? '+' : ''}${offset / 1000} s`;
      await context.system.setClockOffset(instance, offset);
      return async () => context.system.setClockOffset(instance, 0);
    },
  },
  {
    name: 'redis-kill-master',
    domain: 'redis',
    // Standalone: how long Redis is down. Sentinel and Cluster: how long the killed node stays down
    // after its replica took over, past the failover's bound (its time + 3 s), so that the outage
    // judged is the failover's own. A production node restarts on its own machine; here its resync
    // (on the Cluster a large shard's load, full sync and AOF rewrite) takes the cores the calls
    // need. The rejoin is judged apart, as the recovery after this fault's heal.
    hold: (random, topology) =>
      topology === 'standalone' ? random.between(1000, 4000) : random.between(5000, 10_000),
    async inject({ system, random, record }) {
      const fault = await system.redis.killMaster(random);
      record.target = fault.target;
      if (fault.failoverMs !== undefined) record.failoverMs = fault.failoverMs;
      record.note =
        system.redis.kind === 'standalone'
          ? 'SIGKILL, then started again from its AOF'
          : 'SIGKILL, failover, then started again (it rejoins as a replica)';
      return async () => {
        await fault.heal();
        await system.redis.whole();
      };
    },
  },
  {
    name: 'redis-pause',
    domain: 'redis',
    hold: (random, topology) =>
      topology === 'standalone'
        ? random.between(1000, 4000)
        : // Under the failure detection (1 s down-after, 2 s node timeout), or past it.
          random.chance(0.5)
          ? random.between(300, 700)
          : random.between(3000, 5000),
    async inject({ system, random, record, holdMs }) {
      const fault = await system.redis.pauseMaster(random);
      record.target = fault.target;
      record.note = `SIGSTOP for ${holdMs} ms`;
      return async () => {
        await fault.heal();
        await system.redis.whole();
      };
    },
  },
  {
    name: 'redis-replica-down',
    domain: 'redis',
    on: (topology) => topology !== 'standalone',
    hold: between(3000, 8000),
    async inject({ system, random, record }) {
      const fault = await system.redis.replicaDown!(random);
      record.target = fault.target;
      record.note = 'SIGKILL: WAIT goes unacknowledged until it is back';
      return async () => {
        await fault.heal();
        await system.redis.whole();
      };
    },
  },
  {
    name: 'redis-latency',
    domain: 'redis',
    hold: between(4000, 10_000),
    async inject({ system, random, record }) {
      const ms = random.pick([30, 100, 300, 1200]);
      system.redis.setLatency(ms);
      record.target = 'every broker ↔ Redis link';
      record.note = `${ms} ms each way`;
      return async () => system.redis.setLatency(0);
    },
  },
  {
    name: 'provider-slow',
    domain: 'provider',
    hold: between(4000, 10_000),
    async inject(context) {
      const token = context.random.chance(0.6);
      const ms = token ? context.random.between(300, 2500) : context.random.between(200, 1500);
      const target = token ? 'token' : 'api';
      return sandboxFault(
        { kind: 'latency', target, ms },
        `${target === 'token' ? 'token endpoint' : 'license API'} +${ms} ms`,
      )(context);
    },
  },
  {
    name: 'provider-token-503',
    domain: 'provider',
    hold: between(3000, 8000),
    inject: sandboxFault(
      { kind: 'status', target: 'token', status: 503, retryAfter: 1 },
      'token endpoint 503, Retry-After: 1',
    ),
  },
  {
    name: 'provider-lost-answer',
    domain: 'provider',
    hold: between(4000, 10_000),
    inject: sandboxFault(
      { kind: 'drop_after_rotate', count: 1 },
      'the next refresh rotates, then its connection is dropped before the answer',
    ),
  },
  {
    name: 'license-api-503',
    domain: 'provider',
    hold: between(2000, 5000),
    inject: sandboxFault(
      { kind: 'status', target: 'api', status: 503, retryAfter: 1 },
      'license API 503, Retry-After: 1',
    ),
  },
  {
    name: 'receiver-down',
    domain: 'receiver',
    hold: between(4000, 12_000),
    async inject({ system, record }) {
      system.events.down = true;
      record.target = 'the webhook receiver';
      record.note = 'connections reset without an answer';
      return async () => {
        system.events.down = false;
      };
    },
  },
];
