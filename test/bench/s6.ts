/**
 * S6, scale: how the broker's cost grows with the number of sessions. Redis is grown through each
 * size (1,000 to 100,000 by default), once with one connection per session and once with three;
 * at each size, side by side: Redis bytes per session (INFO memory, and MEMORY USAGE by key kind),
 * the largest key shared by sessions, CPU per proxied call over random sessions and over a hot set,
 * throughput, p50/p99 one call at a time, and the broker's RSS and heap. The verdicts are ratios
 * against the smallest size in the same run.
 *
 * A sample of sessions (`realFlows`) is made through the real flow (/auth/start, the provider's
 * consent, /auth/callback, POST /session); the rest straight through the broker's own sessions and
 * connection records (`composeServices` over the benchmark's Redis, with the broker's
 * configuration), which the real flow is far too slow for here. The sample proves the shortcut
 * writes the same keys: same kinds, types, TTLs and sizes. The made sessions share a pool of real
 * grants (no call refreshes within the hour a sandbox access token lives, so none is rotated).
 *
 * `layoutOnly` (the smoke) makes the sessions and checks the layout's invariants, no timings:
 * every key has a TTL, no key shared by sessions grows past 64 KB at 30,000 sessions (scaled to
 * the size), every kind of key is one docs/architecture.md documents, the shortcut's keys are the
 * real flow's.
 */
import { randomBytes, createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { StoreUnavailableError, type Services } from '@baton/server';
import { documentedKeysHere, isDocumented, kindOf } from '../support/key-kinds.ts';
import { surveyKeys, type KindFigures, type Layout } from './layout.ts';
import { deploymentMemoryLimit, oldSpaceMiB } from '../support/kubernetes.ts';
import { wrk, type WrkResult } from './loadgen.ts';
import { cpuMs, rssBytes } from './procs.ts';
import { median, spread, startPath, type Spread } from './scenarios.ts';
import type { BenchStack } from './stack.ts';
import { watchStalls, type Stall } from './stall-watch.ts';

/** The sandbox's licenses: a session's connections are to different licenses, as a user's are. */
const LICENSES = ['lic-1001', 'lic-1002', 'lic-2001'] as const;
/** RFC 7636's example verifier, whose challenge `startPath` sends. */
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
/** Real grants per license that the made sessions share. */
const GRANT_POOL = 100;
/** The bound on a key shared by sessions, at this many sessions (scaled linearly to the size). */
export const SHARED_KEY_BOUND = { bytes: 64 * 1024, sessions: 30_000 };
/** Two kinds of key alike when their mean sizes are this close (the sample against the made). */
const SIZE_TOLERANCE = 0.05;

export interface S6Options {
  sizes: number[];
  /** Connections per session, one pass each. */
  perSession: number[];
  /** Sessions made through the real flow at the first size of each pass. */
  realFlows: number;
  rounds: number;
  seconds: number;
  warmup: number;
  /** Sessions in the hot set. */
  hot: number;
  /** Calls in flight for throughput and CPU. */
  connections: number;
  /** The smoke: make the sessions and check the layout, measure no timings. */
  layoutOnly: boolean;
  /**
   * Node options of the measured broker: the heap flag the image's entrypoint sets in the
   * Deployment's pod (podHeapArgs), as it runs in production.
   */
  brokerArgs: string[];
  log: (line: string) => void;
}

interface Made {
  token: string;
  sid: string;
  connectionIds: string[];
}

interface Grant {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
}

/** One load at one size: wrk's figures with the broker's and Redis's CPU per call. */
export interface LoadFigures {
  rps: Spread;
  cpuUs: Spread;
  redisCpuUs: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  errors: number;
}

export interface S6Size {
  sessions: number;
  keys: number;
  /** used_memory grown while the sessions were made, per session made by the shortcut. */
  bytesPerSession: number;
  /** Mean MEMORY USAGE per session by kind of session key (mean bytes × keys ÷ sessions). */
  ownBytesByKind: Record<string, number>;
  /** Every key shared by sessions (MEMORY USAGE, estimated) ÷ sessions. */
  sharedBytesPerSession: number;
  layout: Layout;
  /** After the loads: keys Redis tracks for client-side caches, and used_memory. */
  trackingKeys?: number;
  usedMemoryMb?: number;
  random?: LoadFigures;
  hot?: LoadFigures;
  /**
   * At the largest size: random calls over all sessions ÷ over the smallest size's sessions,
   * measured in turns, round by round (CPU per call; throughput).
   */
  paired?: { smallest: number; cpu: Spread; rps: Spread };
  rssMb?: number;
  heapMb?: { youngMb: number; oldMb: number; oldCommittedMb?: number; externalMb?: number };
  eventLoopDelayMs?: EventLoopDelay;
  redisStalls?: RedisStalls;
}

/** The broker's event-loop delay (eld-hook.ts), ms. */
export interface EventLoopDelay {
  p99: number;
  max: number;
  /** Of the longest delays, at most this much was spent on a CPU: the rest, waiting for one. */
  onCpuMax?: number;
}

/** What Redis itself says of slow commands and latency spikes since the last look. */
export interface RedisStalls {
  /** SLOWLOG entries (slower than 10 ms): the command's name and its duration. */
  slow: { command: string; ms: number }[];
  /** LATENCY LATEST (events over 20 ms): event, its worst, in ms. */
  latency: { event: string; maxMs: number }[];
  /** INFO stats' latest_fork_usec. */
  latestForkMs: number;
}

export interface RealFlows {
  sessions: number;
  flows: number;
  ms: number;
  failures: { step: string; status: number; atMs: number; error: string }[];
  eventLoopDelayMs?: EventLoopDelay;
  redisStalls: RedisStalls;
}

export interface S6Pass {
  perSession: number;
  real: RealFlows;
  /**
   * Stretches of 250 ms or more in which the bench's loop, Redis or broker 0 did not get on with
   * its work, and whether it ran or waited for a core meanwhile (stall-watch.ts).
   */
  stalls: Stall[];
  /** Commands of the bench's own (making sessions) Redis left unanswered for 1,000 ms. */
  unanswered: { atMs: number; phase: string }[];
  /** Kinds of session key whose sample (real) and made keys differ. */
  sampleDifferences: string[];
  sizes: S6Size[];
}

export interface S6Result {
  passes: S6Pass[];
  violations: string[];
}

export async function s6(stack: BenchStack, options: S6Options): Promise<S6Result> {
  const client = stack.redisClient;
  const send = (args: string[]) => client.sendCommand(args);
  // What Redis says of itself: commands over 10 ms, latency events over 20 ms.
  await send(['CONFIG', 'SET', 'slowlog-log-slower-than', '10000']);
  await send(['CONFIG', 'SET', 'latency-monitor-threshold', '20']);
  const services = stack.services();
  const documented = documentedKeysHere();
  const passes: S6Pass[] = [];
  const violations: string[] = [];
  for (const perSession of options.perSession) {
    const licenses = LICENSES.slice(0, perSession);
    if (licenses.length < perSession) throw new Error(`S6: at most ${LICENSES.length} per session`);
    await send(['FLUSHALL']);
    await redisStalls(send);
    options.log(`S6 ${perSession} connection(s) per session`);
    const pool = await grants(stack, licenses);
    const watch = watchStalls(() => ({ redis: stack.redisPid, broker0: stack.brokers[0]!.pid }));
    const watchStarted = performance.now();
    const since = () => performance.now() - watchStarted;
    const unanswered: S6Pass['unanswered'] = [];
    watch.label('real flows');
    const usedAtStart = await usedMemory(send);
    // The event-loop hook's split of its delay into time on a CPU and time queued for one.
    (await stack.restartBroker(0, options.brokerArgs)).signal('SIGUSR2');
    const real = await realFlows(stack, licenses, options.realFlows, since, options.log);
    const realStalls = await redisStalls(send);
    const realDelay = await eventLoopDelay(stack);
    const realSids = new Set(real.made.map((m) => m.sid));
    options.log(
      `S6 ${real.made.length} sessions through the real flow in ${(real.ms / 1000).toFixed(1)} s, ${real.failures.length} failed steps; Redis grew ${((await usedMemory(send)) - usedAtStart) / 1024} KB`,
    );
    const all: Made[] = [...real.made];
    let madeBytes = 0;
    const sizes: S6Size[] = [];
    let sampleDifferences: string[] = [];
    for (const size of options.sizes) {
      const before = await usedMemory(send);
      const started = performance.now();
      watch.label(`making ${size}`);
      const made = await makeSessions(stack, services, size - all.length, licenses, pool, () =>
        unanswered.push({ atMs: since(), phase: `making ${size}` }),
      );
      madeBytes += (await usedMemory(send)) - before;
      all.push(...made);
      const madeCount = all.length - real.made.length;
      options.log(
        `S6 ${all.length} sessions (${made.length} made in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
      watch.label(`survey ${size}`);
      const layout = await surveyKeys(send, {
        originOf: (sid) => (realSids.has(sid) ? 'real' : 'made'),
      });
      if (sizes.length === 0) sampleDifferences = compareSample(layout.kinds);
      const figures: S6Size = {
        sessions: all.length,
        keys: layout.keys,
        bytesPerSession: madeCount > 0 ? madeBytes / madeCount : NaN,
        ownBytesByKind: ownBytes(layout, all.length),
        sharedBytesPerSession:
          layout.kinds
            .filter((k) => k.origin === 'shared')
            .reduce((sum, k) => sum + k.bytes.mean * k.keys, 0) / all.length,
        layout,
      };
      violations.push(...layoutViolations(perSession, figures, documented));
      watch.label(`loads ${size}`);
      // At the largest size, the smallest size's sessions again, in turns with all of them.
      const smallest = size === options.sizes.at(-1) ? sizes[0]?.sessions : undefined;
      if (!options.layoutOnly) await measure(stack, all, figures, options, smallest);
      sizes.push(figures);
      options.log(`S6 ${describeSize(figures)}`);
    }
    const stalls = watch.stop();
    violations.push(...sampleDifferences.map((d) => `${perSession}/session: ${d}`));
    if (real.failures.length > 0 && options.layoutOnly)
      violations.push(
        `${perSession}/session: ${real.failures.length} real-flow steps failed (${real.failures
          .slice(0, 3)
          .map((f) => `${f.step} ${f.status} ${f.error}`)
          .join('; ')})`,
      );
    passes.push({
      perSession,
      real: {
        sessions: real.made.length,
        flows: real.flows,
        ms: real.ms,
        failures: real.failures,
        ...(realDelay && { eventLoopDelayMs: realDelay }),
        redisStalls: realStalls,
      },
      sampleDifferences,
      sizes,
      stalls,
      unanswered,
    });
  }
  return { passes, violations };
}

/**
 * The broker's V8 flag in the base Deployment's pod: the old space the image's entrypoint gives it
 * under the pod's memory limit (768Mi: 576 MiB). Without it, V8 sizes the heap from this host's
 * 24 GB and lets garbage build up far longer before collecting, so RSS would say when the last
 * collection ran rather than what the broker keeps.
 */
export const podHeapArgs = (): string[] => [
  `--max-old-space-size=${oldSpaceMiB(deploymentMemoryLimit())}`,
];

// ---------------------------------------------------------------- making sessions

/** A pool of real grants per license, issued by the sandbox through its consent and token call. */
async function grants(stack: BenchStack, licenses: readonly string[]): Promise<Grant[][]> {
  const pools: Grant[][] = [];
  for (const license of licenses) {
    await stack.control('consent', { mode: 'approve', licenseId: license });
    const pool: Grant[] = [];
    while (pool.length < GRANT_POOL)
      pool.push(...(await Promise.all(Array.from({ length: 10 }, () => stack.grant(license)))));
    pools.push(pool);
  }
  return pools;
}

/**
 * `count` sessions with a connection to each license, written by the broker's own sessions and
 * connection records (so with the broker's TTLs, sealing and index writes), 64 at a time.
 */
async function makeSessions(
  stack: BenchStack,
  services: Services,
  count: number,
  licenses: readonly string[],
  pool: Grant[][],
  onUnanswered: () => void,
): Promise<Made[]> {
  const made: Made[] = [];
  let next = 0;
  const one = async (): Promise<void> => {
    const n = next++;
    for (;;) {
      try {
        made.push(await session(n));
        return;
      } catch (error) {
        // Redis (or this process) stalled for a second: counted, and the session made again.
        if (!(error instanceof StoreUnavailableError)) throw error;
        onUnanswered();
      }
    }
  };
  const session = async (n: number): Promise<Made> => {
    const { token, sid } = await services.sessions.create();
    const connectionIds: string[] = [];
    for (const [index, license] of licenses.entries()) {
      const grants = pool[index]!;
      const record = {
        id: randomBytes(16).toString('base64url'),
        apiUrl: stack.apiUrlOf(license),
        status: 'connected' as const,
        connectedAt: Date.now(),
        tokens: grants[n % grants.length]!,
      };
      if (!(await services.connections.save(sid, record, 0)))
        throw new Error('S6: a new connection record could not be saved');
      connectionIds.push(record.id);
    }
    return { token, sid, connectionIds };
  };
  await Promise.all(
    Array.from({ length: Math.min(64, count) }, async () => {
      while (next < count) await one();
    }),
  );
  return made;
}

/**
 * `count` sessions through the real flow on broker 0, each with a connection to each license
 * (the second and third join the session, as the extension does): /auth/start, the provider's
 * scripted consent, /auth/callback, POST /session, each flow from its own address as through a
 * reverse proxy (X-Forwarded-For; the broker trusts one hop). 8 flows at a time.
 */
async function realFlows(
  stack: BenchStack,
  licenses: readonly string[],
  count: number,
  since: () => number,
  log: (line: string) => void,
): Promise<Omit<RealFlows, 'redisStalls'> & { made: Made[] }> {
  const broker = stack.brokers[0]!;
  const agent = new Agent({ connections: 16 });
  const made: Made[] = Array.from({ length: count }, () => ({
    token: '',
    sid: '',
    connectionIds: [],
  }));
  const failures: RealFlows['failures'] = [];
  const started = performance.now();
  const failed = async (
    step: string,
    response: { statusCode: number; body: { text(): Promise<string> } },
  ) => {
    const text = await response.body.text().catch(() => '');
    const error = /"error":"([a-z_]+)"/.exec(text)?.[1] ?? '';
    failures.push({ step, status: response.statusCode, atMs: since(), error });
  };
  const flow = async (index: number, phase: number): Promise<void> => {
    const session = made[index]!;
    if (phase > 0 && session.token === '') return;
    const xff = `10.${100 + phase}.${(index >> 8) & 255}.${index & 255}`;
    const start = await request(`${broker.url}${startPath()}`, {
      dispatcher: agent,
      headers: { 'x-forwarded-for': xff },
    });
    if (start.statusCode !== 302) return failed('/auth/start', start);
    await start.body.dump();
    const setCookie = start.headers['set-cookie'];
    const cookie = String(Array.isArray(setCookie) ? setCookie[0] : setCookie).split(';')[0]!;
    const authorize = await request(String(start.headers.location), { dispatcher: agent });
    if (authorize.statusCode !== 302) return failed('authorize', authorize);
    await authorize.body.dump();
    const callback = await request(String(authorize.headers.location), {
      dispatcher: agent,
      headers: { cookie, 'x-forwarded-for': xff },
    });
    const handoff = new URL(String(callback.headers.location ?? 'x:')).searchParams.get('handoff');
    if (callback.statusCode !== 302 || handoff === null) return failed('/auth/callback', callback);
    await callback.body.dump();
    const answer = await request(`${broker.url}/session`, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': xff,
        ...(session.token ? { authorization: `Bearer ${session.token}` } : {}),
      },
      body: JSON.stringify({ handoff, code_verifier: VERIFIER }),
    });
    if (answer.statusCode !== 201) return failed('POST /session', answer);
    const body = (await answer.body.json()) as {
      session_token: string;
      connection: { id: string };
    };
    session.token = body.session_token;
    session.sid = createHash('sha256').update(body.session_token).digest('base64url');
    session.connectionIds.push(body.connection.id);
  };
  for (const [phase, license] of licenses.entries()) {
    await stack.control('consent', { mode: 'approve', licenseId: license });
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(8, count) }, async () => {
        while (next < count) {
          const index = next++;
          await flow(index, phase);
          if ((index + 1) % 5000 === 0) log(`  real flow ${index + 1} of ${count}, ${license}`);
        }
      }),
    );
  }
  await agent.close();
  return {
    sessions: count,
    flows: count * licenses.length,
    ms: performance.now() - started,
    failures,
    made: made.filter((m) => m.connectionIds.length === licenses.length),
  };
}

// ---------------------------------------------------------------- the layout

/** Mean bytes per session of each kind of session key (made sessions' keys). */
function ownBytes(layout: Layout, sessions: number): Record<string, number> {
  const own: Record<string, number> = {};
  for (const kind of layout.kinds) {
    if (kind.origin === 'shared') continue;
    own[kind.kind] = (own[kind.kind] ?? 0) + (kind.bytes.mean * kind.keys) / sessions;
  }
  return own;
}

/** How the sample's session keys (made through the real flow) differ from the made ones'. */
function compareSample(kinds: readonly KindFigures[]): string[] {
  const of = (origin: string) =>
    new Map(kinds.filter((k) => k.origin === origin).map((k) => [k.kind, k]));
  const real = of('real');
  const made = of('made');
  // Nothing to compare when either kind was not made (every session through the real flow, say).
  if (real.size === 0 || made.size === 0) return [];
  const differences: string[] = [];
  for (const kind of new Set([...real.keys(), ...made.keys()])) {
    const r = real.get(kind);
    const m = made.get(kind);
    if (!r || !m) {
      differences.push(`${kind} only in the ${r ? 'real flow' : 'made'} sessions`);
      continue;
    }
    if (r.types.join() !== m.types.join())
      differences.push(`${kind}: type ${r.types.join()} (real) against ${m.types.join()} (made)`);
    if (Math.abs(r.bytes.mean - m.bytes.mean) > SIZE_TOLERANCE * m.bytes.mean)
      differences.push(
        `${kind}: ${r.bytes.mean.toFixed(0)} B (real) against ${m.bytes.mean.toFixed(0)} B (made)`,
      );
    if ((r.ttlMs === null) !== (m.ttlMs === null) || r.withoutTtl !== 0 || m.withoutTtl !== 0)
      differences.push(`${kind}: a TTL in one and not the other`);
    else if (r.ttlMs && m.ttlMs && Math.abs(r.ttlMs.max - m.ttlMs.max) > 0.01 * m.ttlMs.max)
      differences.push(`${kind}: TTL ${r.ttlMs.max} ms (real) against ${m.ttlMs.max} (made)`);
  }
  return differences;
}

/** The layout's invariants at one size. */
function layoutViolations(perSession: number, size: S6Size, documented: RegExp[]): string[] {
  const at = `${perSession}/session at ${size.sessions}`;
  const out: string[] = [];
  for (const kind of size.layout.kinds) {
    if (kind.withoutTtl > 0) out.push(`${at}: ${kind.withoutTtl} ${kind.kind} keys without a TTL`);
    if (!isDocumented(kind.kind, documented))
      out.push(`${at}: ${kind.kind} is not in docs/architecture.md's "Storage keys"`);
  }
  const bound = sharedBound(size.sessions);
  const largest = size.layout.largestShared[0];
  if (largest && largest.bytes > bound)
    out.push(
      `${at}: ${largest.kind} (${largest.type}) holds ${largest.bytes} B, over ${bound.toFixed(0)} B (64 KB at 30,000 sessions)`,
    );
  return [...new Set(out)];
}

/** The bound on one key shared by sessions at `sessions` sessions. */
export const sharedBound = (sessions: number): number =>
  (SHARED_KEY_BOUND.bytes * sessions) / SHARED_KEY_BOUND.sessions;

async function usedMemory(send: (args: string[]) => Promise<unknown>): Promise<number> {
  const info = String(await send(['INFO', 'memory']));
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

/** Slow commands and latency events since the last call, which starts them afresh. */
async function redisStalls(send: (args: string[]) => Promise<unknown>): Promise<RedisStalls> {
  const slowlog = (await send(['SLOWLOG', 'GET', '128'])) as [number, number, number, string[]][];
  const latest = (await send(['LATENCY', 'LATEST'])) as [string, number, number, number][];
  const stats = String(await send(['INFO', 'stats']));
  await send(['SLOWLOG', 'RESET']);
  await send(['LATENCY', 'RESET']);
  return {
    // A script is named by the kind of its first key: which of the broker's scripts it was.
    slow: slowlog.map(([, , us, args]) => ({
      command: /^eval/i.test(String(args[0]))
        ? `EVAL on ${Number(args[2]) > 0 ? kindOf(String(args[3])) : 'no key'}`
        : String(args[0]).toUpperCase(),
      ms: Number(us) / 1000,
    })),
    latency: latest.map(([event, , , max]) => ({ event: String(event), maxMs: Number(max) })),
    latestForkMs: Number(/latest_fork_usec:(\d+)/.exec(stats)?.[1] ?? 0) / 1000,
  };
}

// ---------------------------------------------------------------- the loads

/** The shuffled "path\ttoken" lines of every connection of `sessions`. */
function lines(sessions: readonly Made[]): string {
  const all = sessions.flatMap((s) =>
    s.connectionIds.map((id) => `/connections/${id}/api/users.me\t${s.token}`),
  );
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.join('\n') + '\n';
}

/**
 * On broker 0 started afresh (each size's broker has done the same work when it is measured):
 * a warm-up over random sessions, then rounds of wrk over random sessions and over the hot set,
 * `connections` in flight (throughput, the broker's and Redis's CPU per call) and one at a time
 * (p50, p99); then its RSS and heap.
 */
async function measure(
  stack: BenchStack,
  sessions: readonly Made[],
  size: S6Size,
  options: S6Options,
  smallest?: number,
): Promise<void> {
  const send = (args: string[]) => stack.redisClient.sendCommand(args);
  const files = {
    random: join(stack.logDir, 's6-random.txt'),
    hot: join(stack.logDir, 's6-hot.txt'),
  };
  writeFileSync(files.random, lines(sessions));
  writeFileSync(files.hot, lines(sessions.slice(0, options.hot)));
  const broker = await stack.restartBroker(0, options.brokerArgs);
  broker.signal('SIGUSR2');
  const load = (file: string, connections: number, seconds: number) =>
    wrk({
      origin: broker.url,
      linesFile: file,
      connections,
      threads: connections === 1 ? 1 : 2,
      seconds,
    });
  await load(files.random, options.connections, options.warmup);
  const rounds: Record<
    'random' | 'hot',
    { busy: WrkResult[]; cpu: number[]; redis: number[]; one: WrkResult[] }
  > = {
    random: { busy: [], cpu: [], redis: [], one: [] },
    hot: { busy: [], cpu: [], redis: [], one: [] },
  };
  for (let round = 0; round < options.rounds; round++) {
    for (const set of round % 2 ? (['hot', 'random'] as const) : (['random', 'hot'] as const)) {
      const cpu0 = cpuMs(broker.pid);
      const redis0 = cpuMs(stack.redisPid);
      const busy = await load(files[set], options.connections, options.seconds);
      rounds[set].cpu.push(((cpuMs(broker.pid) - cpu0) * 1000) / busy.requests);
      rounds[set].redis.push(((cpuMs(stack.redisPid) - redis0) * 1000) / busy.requests);
      rounds[set].busy.push(busy);
      rounds[set].one.push(await load(files[set], 1, options.seconds));
    }
    options.log(
      `  round ${round + 1}: random ${rounds.random.busy.at(-1)!.rps.toFixed(0)} req/s, ${rounds.random.cpu.at(-1)!.toFixed(0)} µs/call; hot ${rounds.hot.busy.at(-1)!.rps.toFixed(0)} req/s, ${rounds.hot.cpu.at(-1)!.toFixed(0)} µs/call`,
    );
  }
  const figures = (set: 'random' | 'hot'): LoadFigures => ({
    rps: spread(rounds[set].busy.map((r) => r.rps)),
    cpuUs: spread(rounds[set].cpu),
    redisCpuUs: spread(rounds[set].redis),
    p50Ms: spread(rounds[set].one.map((r) => r.p50Ms)),
    p99Ms: spread(rounds[set].one.map((r) => r.p99Ms)),
    errors: [...rounds[set].busy, ...rounds[set].one].reduce((sum, r) => sum + r.errors, 0),
  });
  size.random = figures('random');
  size.hot = figures('hot');
  size.rssMb = rssBytes(broker.pid) / 2 ** 20;
  const hook = await readHookFresh(stack);
  if (hook?.heap) size.heapMb = hook.heap;
  if (hook) size.eventLoopDelayMs = delayOf(hook);
  const stats = String(await send(['INFO', 'stats']));
  size.trackingKeys = Number(/tracking_total_keys:(\d+)/.exec(stats)?.[1] ?? NaN);
  size.usedMemoryMb = (await usedMemory(send)) / 2 ** 20;
  size.redisStalls = await redisStalls(send);
  // After the size's own figures (RSS among them), which it must not change.
  if (smallest !== undefined) {
    // The smallest size's own sessions, called again now in turns with all of them: the same
    // broker in the same minutes, so the host's drift between sizes (minutes apart) cancels out.
    const few = join(stack.logDir, 's6-smallest.txt');
    writeFileSync(few, lines(sessions.slice(0, smallest)));
    const cpu: number[] = [];
    const rps: number[] = [];
    const measured = async (file: string) => {
      const cpu0 = cpuMs(broker.pid);
      const busy = await load(file, options.connections, options.seconds);
      return { cpuUs: ((cpuMs(broker.pid) - cpu0) * 1000) / busy.requests, rps: busy.rps };
    };
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 ? [files.random, few] : [few, files.random];
      const [first, second] = [await measured(order[0]!), await measured(order[1]!)];
      const [small, all] = round % 2 ? [second, first] : [first, second];
      cpu.push(all.cpuUs / small.cpuUs);
      rps.push(all.rps / small.rps);
    }
    size.paired = { smallest, cpu: spread(cpu), rps: spread(rps) };
  }
}

interface Hook {
  p99: number;
  max: number;
  onCpuMax?: number;
  heap?: { youngMb: number; oldMb: number; oldCommittedMb?: number; externalMb?: number };
}

/** The loop's delay, and the most of one delay it can have spent on a CPU (the rest, queued). */
const delayOf = (hook: Hook): EventLoopDelay => ({
  p99: hook.p99,
  max: hook.max,
  ...(hook.onCpuMax !== undefined && { onCpuMax: hook.onCpuMax }),
});

/** What the event-loop hook of broker 0 writes next (it writes every second). */
async function readHookFresh(stack: BenchStack): Promise<Hook | null> {
  await new Promise((resolve) => setTimeout(resolve, 1200));
  try {
    return JSON.parse(readFileSync(stack.eldFile, 'utf8')) as Hook;
  } catch {
    return null;
  }
}

async function eventLoopDelay(
  stack: BenchStack,
): Promise<{ p99: number; max: number } | undefined> {
  const hook = await readHookFresh(stack);
  return hook ? { p99: hook.p99, max: hook.max } : undefined;
}

function describeSize(size: S6Size): string {
  const f = (n: number | undefined, d = 0) => (n === undefined ? 'n/a' : n.toFixed(d));
  const largest = size.layout.largestShared[0];
  return [
    `${size.sessions} sessions: ${f(size.bytesPerSession)} B/session in Redis`,
    `largest shared ${largest ? `${largest.kind} ${largest.bytes} B` : 'none'}`,
    size.random
      ? `random ${f(size.random.rps.median)} req/s ${f(size.random.cpuUs.median)} µs/call p50 ${f(size.random.p50Ms.median, 3)} ms; hot ${f(size.hot?.rps.median)} req/s ${f(size.hot?.cpuUs.median)} µs/call; RSS ${f(size.rssMb)} MB`
      : '',
  ]
    .filter(Boolean)
    .join('; ');
}

// ---------------------------------------------------------------- the table

/** Per-round ratios of a figure at the largest size against the smallest (rounds paired). */
export function ratioToSmallest(
  pass: S6Pass,
  pick: (size: S6Size) => Spread | undefined,
): Spread | undefined {
  const first = pick(pass.sizes[0]!);
  const last = pick(pass.sizes.at(-1)!);
  if (!first || !last) return undefined;
  return spread(last.rounds.map((value, i) => value / first.rounds[i]!));
}

/** The verdict rows of S6 for results.md's table: [scenario, figure, value, target, aim, verdict]. */
export function s6Rows(result: S6Result): string[][] {
  const rows: string[][] = [];
  const f = (n: number, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');
  const sp = (s: Spread | undefined, d = 2) =>
    s ? `${f(s.median, d)} (${f(s.min, d)}–${f(s.max, d)})` : 'n/a';
  const mark = (ok: boolean) => (ok ? 'met' : 'NOT met');
  for (const pass of result.passes) {
    const name = `S6 ${pass.perSession} conn/session`;
    const first = pass.sizes[0]!;
    const last = pass.sizes.at(-1)!;
    const span = `${last.sessions} ÷ ${first.sessions} sessions`;
    rows.push([
      name,
      'Redis bytes per session (INFO memory while made), by size',
      pass.sizes.map((s) => `${s.sessions}: ${f(s.bytesPerSession, 0)}`).join('; '),
      pass.perSession === 1 ? '<= 1,300' : '',
      '',
      pass.perSession === 1 ? mark(pass.sizes.every((s) => s.bytesPerSession <= 1300)) : '',
    ]);
    rows.push([
      name,
      'largest key shared by sessions, bytes, by size (bound: 64 KB at 30,000, scaled)',
      pass.sizes
        .map(
          (s) =>
            `${s.sessions}: ${s.layout.largestShared[0]?.bytes ?? 0} (${s.layout.largestShared[0]?.kind ?? 'none'})`,
        )
        .join('; '),
      '<= 64 KB at 30,000',
      '',
      mark(
        pass.sizes.every((s) => (s.layout.largestShared[0]?.bytes ?? 0) <= sharedBound(s.sessions)),
      ),
    ]);
    if (!first.random) continue;
    const throughput = ratioToSmallest(pass, (s) => s.random?.rps);
    const cpu = ratioToSmallest(pass, (s) => s.random?.cpuUs);
    rows.push([
      name,
      `throughput over random sessions, ${span}`,
      sp(throughput),
      '>= 0.75',
      '',
      throughput ? mark(throughput.median >= 0.75) : '',
    ]);
    rows.push([
      name,
      `CPU per proxied call over random sessions, ${span}`,
      `${sp(cpu)}x`,
      '<= 1.3x',
      '',
      cpu ? mark(cpu.median <= 1.3) : '',
    ]);
    if (last.paired)
      rows.push([
        name,
        `control: at ${last.sessions} sessions, calls over all ÷ over the first ${last.paired.smallest} called in turns with them: CPU per call; throughput`,
        `${sp(last.paired.cpu)}x; ${sp(last.paired.rps)}`,
        '',
        '',
        '',
      ]);
    const rss = (last.rssMb ?? NaN) / (first.rssMb ?? NaN);
    rows.push([
      name,
      `broker RSS, ${span} (${f(first.rssMb ?? NaN, 0)} → ${f(last.rssMb ?? NaN, 0)} MB)`,
      `${f(rss)}x`,
      '<= 1.2x',
      '',
      mark(rss <= 1.2),
    ]);
  }
  return rows;
}

/** S6's figures side by side, one column per size, for each pass. */
export function s6Table(result: S6Result): string[] {
  const out: string[] = [];
  const f = (n: number | undefined, d = 0) =>
    n === undefined || !Number.isFinite(n)
      ? 'n/a'
      : n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const sp = (s: Spread | undefined, d = 0) =>
    s ? `${f(s.median, d)} (${f(s.min, d)}–${f(s.max, d)})` : 'n/a';
  for (const pass of result.passes) {
    const sizes = pass.sizes;
    out.push(
      '',
      `S6, ${pass.perSession} connection(s) per session: ${pass.real.sessions} sessions through the real flow (${pass.real.flows} flows in ${f(pass.real.ms / 1000, 1)} s, ${pass.real.failures.length} failed steps), the rest made by the broker's code; medians (min–max over rounds).`,
      '',
      `| figure | ${sizes.map((s) => `${f(s.sessions)} sessions`).join(' | ')} |`,
      `|---|${sizes.map(() => '---').join('|')}|`,
    );
    const row = (label: string, cell: (s: S6Size) => string) =>
      out.push(`| ${label} | ${sizes.map(cell).join(' | ')} |`);
    row('keys (per session)', (s) => `${f(s.keys)} (${f(s.keys / s.sessions, 2)})`);
    row('Redis bytes per session (used_memory while made)', (s) => f(s.bytesPerSession));
    const kinds = [...new Set(sizes.flatMap((s) => Object.keys(s.ownBytesByKind)))];
    for (const kind of kinds)
      row(`  MEMORY USAGE per session: \`${kind}\``, (s) => f(s.ownBytesByKind[kind]));
    row('  shared keys per session (MEMORY USAGE)', (s) => f(s.sharedBytesPerSession));
    row('largest shared key, bytes (kind)', (s) => {
      const k = s.layout.largestShared[0];
      return k ? `${f(k.bytes)} (\`${k.kind}\`)` : 'none';
    });
    if (sizes[0]?.random) {
      row('throughput, random sessions, req/s', (s) => sp(s.random?.rps));
      row('throughput, hot set, req/s', (s) => sp(s.hot?.rps));
      row('broker CPU µs per call, random', (s) => sp(s.random?.cpuUs));
      row('broker CPU µs per call, hot set', (s) => sp(s.hot?.cpuUs));
      row(
        'Redis CPU µs per call, random; hot',
        (s) => `${sp(s.random?.redisCpuUs, 1)}; ${sp(s.hot?.redisCpuUs, 1)}`,
      );
      row('p50 one at a time, ms, random', (s) => sp(s.random?.p50Ms, 3));
      row('p99 one at a time, ms, random', (s) => sp(s.random?.p99Ms, 3));
      row(
        'p50; p99 one at a time, ms, hot set',
        (s) => `${sp(s.hot?.p50Ms, 3)}; ${sp(s.hot?.p99Ms, 3)}`,
      );
      row('broker RSS, MB', (s) => f(s.rssMb));
      row(
        'broker heap, MB: young (committed); the rest (used; committed); outside the heap',
        (s) =>
          s.heapMb
            ? `${f(s.heapMb.youngMb)}; ${f(s.heapMb.oldMb)}; ${f(s.heapMb.oldCommittedMb)}; ${f(s.heapMb.externalMb)}`
            : 'n/a',
      );
      row("broker event-loop delay p99; max; a delay's most on a CPU, ms", (s) =>
        delayText(s.eventLoopDelayMs),
      );
      row(
        'Redis after the loads: used_memory MB; keys tracked for client caches',
        (s) => `${f(s.usedMemoryMb, 1)}; ${f(s.trackingKeys)}`,
      );
      row('errors (non-2xx, timeouts)', (s) => f((s.random?.errors ?? 0) + (s.hot?.errors ?? 0)));
      row('Redis: commands over 10 ms; latency events over 20 ms', (s) => stalls(s.redisStalls));
    }
    out.push(
      '',
      `Real flows: broker event-loop delay p99; max; a delay's most on a CPU ${delayText(pass.real.eventLoopDelayMs)} ms; Redis ${stalls(pass.real.redisStalls)}.${pass.real.failures.length ? ` Failed steps: ${summarizeFailures(pass.real.failures)}.` : ''}`,
      `Stalls of 250 ms or more (stall-watch.ts): ${stallText(pass.stalls)}. The bench's own commands left unanswered for 1,000 ms: ${unansweredText(pass.unanswered)}.`,
      `The real flow's session keys against the made ones: ${pass.sampleDifferences.length ? pass.sampleDifferences.join('; ') : 'the same kinds, types, TTLs and sizes'}.`,
    );
  }
  if (result.violations.length) out.push('', `Layout violations: ${result.violations.join('; ')}.`);
  return out;
}

/** Unanswered commands by phase and second: how many, when. */
function unansweredText(unanswered: S6Pass['unanswered']): string {
  if (unanswered.length === 0) return 'none';
  const groups = new Map<string, number>();
  for (const u of unanswered) {
    const name = `${u.phase} at ${(u.atMs / 1000).toFixed(0)} s`;
    groups.set(name, (groups.get(name) ?? 0) + 1);
  }
  return [...groups].map(([name, n]) => `${n} in ${name}`).join(', ');
}

/** Stalls by who and phase, the five longest in full: who, phase, when, running/queued ms. */
function stallText(stalls: readonly Stall[]): string {
  if (stalls.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const stall of stalls) counts.set(stall.who, (counts.get(stall.who) ?? 0) + 1);
  const longest = [...stalls].sort((a, b) => b.ms - a.ms).slice(0, 5);
  return `${[...counts].map(([who, n]) => `${n} × ${who}`).join(', ')}; longest: ${longest
    .map(
      (s) =>
        `${s.who} ${s.ms.toFixed(0)} ms in ${s.phase} at ${(s.atMs / 1000).toFixed(1)} s (ran ${s.runningMs.toFixed(0)}, queued ${s.queuedMs.toFixed(0)})`,
    )
    .join('; ')}`;
}

function delayText(d: EventLoopDelay | undefined): string {
  if (!d) return 'n/a';
  return [d.p99, d.max, d.onCpuMax]
    .map((ms) => (ms === undefined ? 'n/a' : ms.toFixed(1)))
    .join('; ');
}

function stalls(s: RedisStalls | undefined): string {
  if (!s) return 'n/a';
  const slow = s.slow.length
    ? s.slow.map((c) => `${c.command} ${c.ms.toFixed(0)} ms`).join(', ')
    : 'none';
  const latency = s.latency.length
    ? s.latency.map((l) => `${l.event} ${l.maxMs} ms`).join(', ')
    : 'none';
  return `${slow}; ${latency}`;
}

function summarizeFailures(failures: RealFlows['failures']): string {
  const groups = new Map<string, number[]>();
  for (const failure of failures) {
    const name = `${failure.step} ${failure.status} ${failure.error}`.trim();
    groups.set(name, [...(groups.get(name) ?? []), failure.atMs]);
  }
  return [...groups]
    .map(
      ([name, at]) =>
        `${at.length} × ${name} at ${median(at).toFixed(0)} ms (${Math.min(...at).toFixed(0)}–${Math.max(...at).toFixed(0)})`,
    )
    .join(', ');
}
