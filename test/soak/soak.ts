import { BROKER_ERROR_HEADER, connectionsResponseSchema, routes } from '@baton/shared';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ConnectionProbe, History, License, SessionProbe } from './history.ts';
import { FAULT_KINDS } from './faults.ts';
import { Nemesis, schedule, type Planned } from './nemesis.ts';
import { Random } from './random.ts';
import type { TopologyName } from './soak-redis.ts';
import { delivered, scanRedis } from './survey.ts';
import { LEASE_MS, SoakSystem, type SystemOptions } from './system.ts';
import type { Adopted } from './prefill.ts';
import { LICENSES } from './user-requests.ts';
import { SimUser } from './users.ts';

export interface SoakOptions {
  topology: TopologyName;
  seed: string;
  /** How long the users and the nemesis run, ms. */
  durationMs: number;
  users: number;
  /** The provider's access token lifetime, seconds. */
  lifetimeS: number;
  /** The nemesis's mean gap between faults, ms; 0: no faults. */
  meanGapMs: number;
  /** Only these fault kinds (default every kind the topology has). */
  kinds?: readonly string[];
  /** The provider revokes every grant of a license this often, ms (0: never). */
  licenseRevocationEveryMs: number;
  /**
   * Sessions written into Redis before the users come (prefill.ts); the users start from the
   * ones it answers, a sample among them.
   */
  prefill?: (system: SoakSystem, log: (line: string) => void) => Promise<Adopted[]>;
  /** Every broker's environment, over the soak's. */
  env?: Record<string, string>;
  /** The brokers in this process, their stores wrapped (system.ts): the checker's own tests. */
  inProcess?: SystemOptions['inProcess'];
  /** This schedule of faults instead of the seeded one (at: ms from the users' start). */
  plan?: readonly { kind: string; at: number; holdMs: number }[];
  /** How long the users go on after the last heal (default 15 s). */
  tailMs?: number;
  /** Ends the users' phase early (Ctrl-C): every fault is healed, and the run checked all the same. */
  signal?: AbortSignal;
  log: (line: string) => void;
}

/** How long after the last heal the users go on (their recovery is what C5 measures). */
const TAIL_MS = 15_000;
/** The final sign-outs' old tokens are tried again this long after (past SIGN_OUT_GRACE_MS). */
const ZOMBIE_AFTER_MS = 4000;

/**
 * One soak: the system started, (the prefill,) the baseline of Redis, the users and the nemesis
 * for the duration, every fault healed, the users on a little longer, a quiet period (every
 * instance ready), the final probes of every session and connection on every instance, everyone
 * signs out, the events delivered, then Redis surveyed. Answers the history; the checker judges it.
 */
export async function runSoak(options: SoakOptions): Promise<History> {
  const origin = performance.now();
  const now = () => Math.round((performance.now() - origin) * 10) / 10;
  const log = (line: string) => options.log(`[${(now() / 1000).toFixed(1)} s] ${line}`);
  const random = new Random(options.seed);
  log(`starting ${options.topology}: Redis, the sandbox behind the tap, the receiver, 3 brokers`);
  const system = await SoakSystem.start(
    {
      topology: options.topology,
      lifetimeS: options.lifetimeS,
      ...(options.env ? { env: options.env } : {}),
      ...(options.inProcess ? { inProcess: options.inProcess } : {}),
    },
    now,
  );
  const history: History = {
    seed: options.seed,
    topology: options.topology,
    epoch: Date.now() - now(),
    phases: { usersFrom: 0, usersTo: 0, healedAt: 0, quietUntil: 0 },
    lifetimeS: options.lifetimeS,
    leaseMs: LEASE_MS,
    sessions: [],
    calls: [],
    flows: [],
    removals: [],
    signOuts: [],
    revocations: [],
    faults: [],
    lives: [],
    pauses: [],
    tokens: [],
    api: [],
    deliveries: [],
    connectionProbes: [],
    sessionProbes: [],
    logs: [],
  };
  const users: SimUser[] = [];
  try {
    await system.ready();
    const adopted = options.prefill ? await options.prefill(system, log) : [];
    log('warm-up: one user through every route, then the baseline of Redis');
    const warmUp = new SimUser(options.users, random.fork('warm-up'), {
      endpoint: system.world.endpoint,
      instances: system.instances,
      now,
      history,
      chainOf: (token: string) => system.tap.chainOf.get(token),
      revoke: (chain: string) => system.tap.revoke(chain),
    });
    await warmUp.warmUp();
    await warmUp.close();
    await delivered(system, new Map());
    const baseline = await scanRedis(system, new Map());
    const world = {
      endpoint: system.world.endpoint,
      instances: system.instances,
      now,
      history,
      chainOf: (token: string) => system.tap.chainOf.get(token),
      revoke: (chain: string) => system.tap.revoke(chain),
    };
    for (let index = 0; index < options.users; index++) {
      const user = new SimUser(index, random.fork(`user ${index}`), world);
      const own = adopted[index];
      if (own) user.adopt(own);
      users.push(user);
    }

    const planned: Planned[] = options.plan
      ? options.plan.map(({ kind, at, holdMs }) => ({
          kind: FAULT_KINDS.find((each) => each.name === kind)!,
          at,
          holdMs,
        }))
      : options.meanGapMs > 0
        ? schedule(random.fork('nemesis'), options.topology, {
            durationMs: options.durationMs,
            meanGapMs: options.meanGapMs,
            ...(options.kinds ? { kinds: options.kinds } : {}),
          })
        : [];
    log(
      `${options.users} users for ${options.durationMs / 1000} s; ${planned.length} faults planned (${new Set(planned.map((p) => p.kind.name)).size} kinds)`,
    );
    history.phases.usersFrom = now();
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const running = users.map((user) => user.run());
    const nemesis = new Nemesis(system, random.fork('nemesis run'), log);
    const faults = nemesis.run(planned, now());
    const progress = setInterval(() => log(progressLine(history, nemesis)), 30_000);
    const revocations = revokeLicenses(system, history, random.fork('licenses'), options, now);
    try {
      await sleep(options.durationMs, options.signal);
      nemesis.stop();
      revocations.stop();
      await faults;
      history.phases.healedAt = now();
      log('every fault healed; the users go on a little');
      await sleep(options.tailMs ?? TAIL_MS);
    } finally {
      clearInterval(progress);
      history.faults = nemesis.faults;
      for (const user of users) user.stop();
      await Promise.all(running);
      loop.disable();
      history.soakLoop = {
        p99Ms: Math.round(loop.percentile(99) / 1e6),
        maxMs: Math.round(loop.max / 1e6),
      };
    }
    history.phases.usersTo = now();

    log('quiet period: every instance ready, Redis whole');
    await system.redis.whole(120_000);
    await system.ready(120_000);
    history.phases.quietUntil = now();

    log('final probes: every session and connection on every instance');
    await probe(system, users, history);

    log('everyone signs out (and tries the old token once more, past the grace)');
    for (const user of users)
      await user.signOut(random.int(system.instances), { zombieAfterMs: ZOMBIE_AFTER_MS });
    await Promise.all(users.map((user) => user.settled()));
    log('waiting for every event to be delivered');
    const labels = new Map(
      history.sessions.map((session) => [session.ref, `session ${session.label}`]),
    );
    const undelivered = await delivered(system, labels);
    if (undelivered.length > 0) log(`outboxes not delivered: ${undelivered.join('; ')}`);
    const end = await scanRedis(system, labels);
    history.redis = {
      ...(end.ttlSample === undefined ? {} : { ttlSample: end.ttlSample }),
      problems: end.problems,
      sessionKeys: end.sessionKeys,
      leftBehind: end.leftBehind,
      undelivered,
      keys: end.keys,
      baselineBytes: baseline.bytes - baseline.expiringBytes,
      finalBytes: end.bytes,
      expiringBytes: end.expiringBytes,
    };
    log(`done: ${history.calls.length} calls, ${system.tap.tokens.length} token requests`);
  } catch (error) {
    // What the run recorded until then is checked all the same, and the report says it stopped.
    history.aborted = String(error).split('\n').slice(0, 3).join(' ');
    log(`the run stopped early: ${history.aborted}`);
    for (const user of users) user.stop();
  } finally {
    system.fill(history);
    for (const user of users) await user.close();
    await system.close();
  }
  return history;
}

function progressLine(history: History, nemesis: Nemesis): string {
  const ok = history.calls.filter((call) => call.status >= 200 && call.status < 300).length;
  return `${history.calls.length} calls (${ok} 2xx), ${history.flows.length} flows, ${nemesis.faults.length} faults so far`;
}

/** Now and then the provider revokes every grant of one license (its owner uninstalled it). */
function revokeLicenses(
  system: SoakSystem,
  history: History,
  random: Random,
  options: SoakOptions,
  now: () => number,
): { stop(): void } {
  if (options.licenseRevocationEveryMs <= 0) return { stop() {} };
  const timer = setInterval(() => {
    const license = random.pick(LICENSES);
    system.world.control.revokeGrant(license);
    history.revocations.push({ at: now(), by: 'sandbox', license });
  }, options.licenseRevocationEveryMs);
  return { stop: () => clearInterval(timer) };
}

/**
 * Every user's session on every instance (GET /connections), and each connection the user or the
 * listing knows on every instance (users.me).
 */
async function probe(system: SoakSystem, users: readonly SimUser[], history: History) {
  for (const user of users) {
    const session = user.session;
    if (!session) continue;
    const listings: Map<string, { status: string; reason?: string }>[] = [];
    for (let instance = 0; instance < system.instances; instance++) {
      const entry: SessionProbe = { session: session.record.label, instance, status: 0 };
      const listed = new Map<string, { status: string; reason?: string }>();
      try {
        const response = await user.client.fetch(routes.connections, {
          via: instance,
          headers: { authorization: `Bearer ${session.token}` },
          timeoutMs: 20_000,
        });
        entry.status = response.status;
        const error = response.headers.get(BROKER_ERROR_HEADER);
        if (error !== null) entry.error = error;
        const text = await response.text();
        if (response.status === 200)
          for (const connection of connectionsResponseSchema.parse(JSON.parse(text)).connections)
            listed.set(connection.id, {
              status: connection.status,
              ...(connection.disconnected_reason ? { reason: connection.disconnected_reason } : {}),
            });
      } catch {
        entry.status = 0;
      }
      history.sessionProbes.push(entry);
      listings.push(listed);
    }
    for (const connection of session.connections.values()) {
      for (let instance = 0; instance < system.instances; instance++) {
        const call = await user.call(session, connection, instance, { path: 'users.me' });
        const listed = listings[instance]?.get(connection.id);
        const entry: ConnectionProbe = {
          session: session.record.label,
          connection: connection.id,
          license: connection.license as License,
          instance,
          listed:
            history.sessionProbes.at(-system.instances + instance)?.status !== 200
              ? 'unanswered'
              : ((listed?.status as 'connected' | 'disconnected' | undefined) ?? 'absent'),
          status: call.status,
          ...(listed?.reason ? { reason: listed.reason } : {}),
          ...(call.error ? { error: call.error } : {}),
          ...(call.gotLicense ? { gotLicense: call.gotLicense } : {}),
        };
        history.connectionProbes.push(entry);
      }
    }
  }
}

/** A wait of `ms`, over at once when `signal` aborts. */
const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
