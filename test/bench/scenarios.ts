import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import {
  openLoop,
  openLoopInterleaved,
  percentile,
  wrk,
  type OpenLoopResult,
  type Target,
} from './loadgen.ts';
import { cpuMs, ELD_HOOK, rssBytes, type Proc } from './procs.ts';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  EXTENSION_REDIRECT,
  LICENSE,
  type BenchStack,
  type Session,
} from './stack.ts';

export interface Options {
  rounds: number;
  seconds: number;
  warmup: number;
  connections: number;
  openRate: number;
  /** S1's open loop: a, b and B in turns of this many ms (0: back to back, a whole share each). */
  openSliceMs: number;
  stormSize: number;
  stormReps: number;
  stormDelays: number[];
  callbackFlows: number;
  opens: number;
  soakSeconds: number;
  soakRate: number | undefined;
  /** Node options of the bare proxy (`run.ts --bare-args`), as `--broker-args` for the brokers. */
  bareArgs: string[];
  log: (line: string) => void;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
export interface Spread {
  median: number;
  min: number;
  max: number;
  rounds: number[];
}
export const spread = (values: number[]): Spread => ({
  median: median(values),
  min: Math.min(...values),
  max: Math.max(...values),
  rounds: values,
});

/** CPU ms of each process over `work`. */
async function measured<T>(
  procs: Record<string, Proc | { pid: number }>,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: Record<string, number> }> {
  const before = Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, cpuMs(p.pid)]));
  const result = await work();
  const cpu = Object.fromEntries(
    Object.entries(procs).map(([k, p]) => [k, cpuMs(p.pid) - before[k]!]),
  );
  return { result, cpu };
}

const rotate = <T>(items: T[], by: number): T[] =>
  items.map((_item, index) => items[(index + by) % items.length]!);

/** S1's call for each session: users.me through the broker, with its session token. */
export const viaBroker = (sessions: readonly Session[]): Target[] =>
  sessions.map((s) => ({ path: `/connections/${s.connectionId}/api/users.me`, token: s.token }));

/** The same call straight at the upstream, with each session's access token. */
export const direct = (sessions: readonly Session[]): Target[] =>
  sessions.map((s) => ({ path: `/licenses/${LICENSE}/users.me`, token: s.accessToken }));

export function writeLines(dir: string, name: string, lines: Target[]): string {
  const file = join(dir, name);
  writeFileSync(file, lines.map((line) => `${line.path}\t${line.token}`).join('\n') + '\n');
  return file;
}

export const startPath = (): string =>
  `/auth/start?${new URLSearchParams({
    locale: 'nl',
    redirect_uri: EXTENSION_REDIRECT,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  })}`;

// ---------------------------------------------------------------- S1 + S3 /auth/start

export interface S1Result {
  throughput: Record<string, Spread>;
  cpuPerReqUs: Record<string, Spread>;
  ratioThroughput: Spread;
  ratioCpu: Spread;
  ratioStart: Spread;
  oneConnP50Ms: Record<string, Spread>;
  addedP50Ms: Spread;
  addedP50BareMs: Spread;
  openLoopP99Ms: Record<string, Spread>;
  ratioOpenP99: Spread;
  openLoopErrors: number;
  errors: Record<string, number>;
}

export async function s1(
  stack: BenchStack,
  sessions: Session[],
  options: Options,
): Promise<S1Result> {
  const { log } = options;
  const broker = stack.brokers[0]!;
  const bare = stack.bare!;
  const straight = direct(sessions);
  const brokered = viaBroker(sessions);
  const brokerFile = writeLines(stack.logDir, 'broker.txt', brokered);
  const files = {
    a: writeLines(stack.logDir, 'direct.txt', straight),
    b: brokerFile,
    B: brokerFile,
    start: writeLines(stack.logDir, 'start.txt', [{ path: startPath(), token: 'none' }]),
  };
  const origin = { a: stack.sandbox.url, b: bare.url, B: broker.url, start: broker.url };
  const procsOf = {
    a: { upstream: stack.sandbox },
    b: { proxy: bare, upstream: stack.sandbox },
    B: { proxy: broker, upstream: stack.sandbox, redis: { pid: stack.redisPid } },
    start: { proxy: broker, redis: { pid: stack.redisPid } },
  };
  type V = keyof typeof origin;
  const throughputVariants: V[] = ['a', 'b', 'B', 'start'];
  const errors: Record<string, number> = {};

  const load = (v: V, connections: number, seconds: number) =>
    wrk({
      origin: origin[v],
      linesFile: files[v],
      connections,
      threads: connections === 1 ? 1 : 2,
      seconds,
      xff: v === 'start',
    });

  log(`S1 warm-up ${options.warmup}s per variant`);
  for (const v of throughputVariants) await load(v, options.connections, options.warmup);

  const rps: Record<string, number[]> = { a: [], b: [], B: [], start: [] };
  const cpu: Record<string, number[]> = {
    a: [],
    b: [],
    B: [],
    start: [],
    'B redis': [],
    'start redis': [],
  };
  const ratioThroughput: number[] = [];
  const ratioCpu: number[] = [];
  const ratioStart: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const current: Record<string, { rps: number; cpuUs: number; redisUs: number }> = {};
    for (const v of rotate(throughputVariants, round)) {
      await stack.control('reset', {});
      const { result, cpu: used } = await measured(procsOf[v], () =>
        load(v, options.connections, options.seconds),
      );
      errors[`S1 ${v}`] = (errors[`S1 ${v}`] ?? 0) + result.errors;
      const main = v === 'a' ? used.upstream! : used.proxy!;
      current[v] = {
        rps: result.rps,
        cpuUs: (main * 1000) / result.requests,
        redisUs: ((used.redis ?? 0) * 1000) / result.requests,
      };
      rps[v]!.push(result.rps);
      cpu[v]!.push(current[v].cpuUs);
      if (v === 'B' || v === 'start') cpu[`${v} redis`]!.push(current[v].redisUs);
    }
    ratioThroughput.push(current.B!.rps / current.b!.rps);
    ratioCpu.push(current.B!.cpuUs / current.b!.cpuUs);
    ratioStart.push(current.start!.rps / current.b!.rps);
    log(
      `S1 round ${round + 1}: a ${current.a!.rps.toFixed(0)} b ${current.b!.rps.toFixed(0)} B ${current.B!.rps.toFixed(0)} start ${current.start!.rps.toFixed(0)} req/s; B/b ${ratioThroughput.at(-1)!.toFixed(2)}, cpu ${ratioCpu.at(-1)!.toFixed(2)}x`,
    );
  }

  // One connection: added latency.
  const oneConn: Record<string, number[]> = { a: [], b: [], B: [] };
  const added: number[] = [];
  const addedBare: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const p50: Record<string, number> = {};
    for (const v of rotate(['a', 'b', 'B'] as V[], round)) {
      const result = await load(v, 1, options.seconds);
      errors[`S1 1conn ${v}`] = (errors[`S1 1conn ${v}`] ?? 0) + result.errors;
      p50[v] = result.p50Ms;
      oneConn[v]!.push(result.p50Ms);
    }
    added.push(p50.B! - p50.a!);
    addedBare.push(p50.b! - p50.a!);
    log(
      `S1 1-conn round ${round + 1}: p50 a ${p50.a!.toFixed(3)} b ${p50.b!.toFixed(3)} B ${p50.B!.toFixed(3)} ms`,
    );
  }

  // Open loop at a constant rate: tail latency. The three back to back (or in turns of
  // `openSliceMs`), each after an uncounted half second in which its pool opens its connections.
  const openP99: Record<string, number[]> = { a: [], b: [], B: [] };
  const ratioOpen: number[] = [];
  let openErrors = 0;
  const targets = { a: straight, b: brokered, B: brokered } as Record<string, Target[]>;
  for (let round = 0; round < options.rounds; round++) {
    const order = rotate(['a', 'b', 'B'] as V[], round);
    await stack.control('reset', {});
    const results = await openLoopInterleaved({
      variants: order.map((v) => ({ origin: origin[v], targets: targets[v]! })),
      rate: options.openRate,
      seconds: options.seconds,
      sliceMs: options.openSliceMs,
      warmupMs: 500,
    });
    const p99: Record<string, OpenLoopResult> = {};
    order.forEach((v, i) => {
      p99[v] = results[i]!;
      openErrors += results[i]!.errors;
      openP99[v]!.push(results[i]!.p99Ms);
    });
    ratioOpen.push(p99.B!.p99Ms / p99.b!.p99Ms);
    log(
      `S1 open-loop round ${round + 1}: p99 a ${p99.a!.p99Ms.toFixed(2)} b ${p99.b!.p99Ms.toFixed(2)} B ${p99.B!.p99Ms.toFixed(2)} ms (generator lag p99 ${p99.B!.lagP99Ms.toFixed(2)} ms)`,
    );
  }

  const map = (record: Record<string, number[]>) =>
    Object.fromEntries(Object.entries(record).map(([k, v]) => [k, spread(v)]));
  return {
    throughput: map(rps),
    cpuPerReqUs: map(cpu),
    ratioThroughput: spread(ratioThroughput),
    ratioCpu: spread(ratioCpu),
    ratioStart: spread(ratioStart),
    oneConnP50Ms: map(oneConn),
    addedP50Ms: spread(added),
    addedP50BareMs: spread(addedBare),
    openLoopP99Ms: map(openP99),
    ratioOpenP99: spread(ratioOpen),
    openLoopErrors: openErrors,
    errors,
  };
}

// ---------------------------------------------------------------- S2 refresh storm

/** Counts the SET commands Redis executes while it runs, via `redis-cli MONITOR`. */
async function monitor(port: number): Promise<() => Promise<{ lockSets: number; sets: number }>> {
  const child = spawn('redis-cli', ['-p', String(port), 'monitor'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let buffer = '';
  let lockSets = 0;
  let sets = 0;
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('OK')) resolve();
        if (/\] "set" /i.test(line)) {
          sets++;
          if (/\] "set" "[^"]*:lock:/i.test(line)) lockSets++;
        }
      }
    });
  });
  return async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    child.kill('SIGTERM');
    return { lockSets, sets };
  };
}

export interface StormRep {
  delayMs: number;
  tokenCalls: number;
  invalidGrant: number;
  non2xx: number;
  lockAttempts: number;
  stormMs: number;
  validBurstMs: number;
  excessMs: number;
}

export interface S2Result {
  instances: number;
  size: number;
  reps: StormRep[];
  byDelay: Record<string, { excessMs: Spread; tokenCalls: number[]; lockAttempts: number[] }>;
  violations: string[];
}

export async function s2(stack: BenchStack, session: Session, options: Options): Promise<S2Result> {
  const { log } = options;
  const agent = new Agent({ connections: 256, keepAliveTimeout: 4_000 });
  const brokers = stack.brokers;
  const burst = async (): Promise<{ ms: number; statuses: number[]; bodies: string[] }> => {
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: options.stormSize }, async (_x, index) => {
        const broker = brokers[index % brokers.length]!;
        const response = await request(
          `${broker.url}/connections/${session.connectionId}/api/users.me`,
          { dispatcher: agent, headers: { authorization: `Bearer ${session.token}` } },
        );
        const body = await response.body.text();
        return { status: response.statusCode, body };
      }),
    );
    return {
      ms: performance.now() - started,
      statuses: answers.map((a) => a.status),
      bodies: answers.filter((a) => a.status >= 300).map((a) => a.body),
    };
  };
  // Open the client's connections to every instance first, so storm and burst start alike.
  await burst();
  await burst();
  const reps: StormRep[] = [];
  const violations: string[] = [];
  for (let rep = 0; rep < options.stormReps; rep++) {
    for (const delayMs of options.stormDelays) {
      await stack.expire(session);
      await stack.control('reset', {});
      if (delayMs > 0)
        await stack.control('faults', { kind: 'latency', target: 'token', ms: delayMs });
      const stop = await monitor(stack.redis.port);
      const storm = await burst();
      const { lockSets } = await stop();
      const { requests } = (await stack.control('requests')) as {
        requests: { target: string; status: number; path: string }[];
      };
      const token = requests.filter((r) => r.target === 'token');
      const counters = (await stack.control('counters')) as { token_errors: number };
      const valid = await burst();
      const non2xx =
        storm.statuses.filter((s) => s < 200 || s >= 300).length +
        valid.statuses.filter((s) => s < 200 || s >= 300).length;
      const invalidGrant =
        token.filter((r) => r.status === 400).length +
        storm.bodies.filter((b) => /invalid_grant|reauthorization_required/.test(b)).length;
      const row: StormRep = {
        delayMs,
        tokenCalls: token.length,
        invalidGrant: Math.max(invalidGrant, counters.token_errors),
        non2xx,
        lockAttempts: lockSets,
        stormMs: storm.ms,
        validBurstMs: valid.ms,
        excessMs: storm.ms - valid.ms,
      };
      reps.push(row);
      log(
        `S2 rep ${rep + 1} delay ${delayMs} ms: token calls ${row.tokenCalls}, invalid_grant ${row.invalidGrant}, non-2xx ${row.non2xx}, lock SETs ${row.lockAttempts}, storm ${row.stormMs.toFixed(1)} ms vs burst ${row.validBurstMs.toFixed(1)} ms`,
      );
      if (row.tokenCalls !== 1)
        violations.push(`delay ${delayMs} rep ${rep + 1}: ${row.tokenCalls} token calls`);
      if (row.invalidGrant !== 0)
        violations.push(`delay ${delayMs} rep ${rep + 1}: ${row.invalidGrant} invalid_grant`);
      if (row.non2xx !== 0) {
        violations.push(
          `delay ${delayMs} rep ${rep + 1}: ${row.non2xx} non-2xx (${storm.bodies.slice(0, 2).join(' | ')})`,
        );
      }
    }
  }
  await stack.control('reset', {});
  await agent.close();
  const byDelay: S2Result['byDelay'] = {};
  for (const delayMs of options.stormDelays) {
    const rows = reps.filter((r) => r.delayMs === delayMs);
    byDelay[String(delayMs)] = {
      excessMs: spread(rows.map((r) => r.excessMs)),
      tokenCalls: rows.map((r) => r.tokenCalls),
      lockAttempts: rows.map((r) => r.lockAttempts),
    };
  }
  return { instances: brokers.length, size: options.stormSize, reps, byDelay, violations };
}

// ---------------------------------------------------------------- S3 /auth/callback

export interface S3Result {
  flows: number;
  callbackMs: { p50: number; p99: number };
  directExchangeMs: { p50: number; p99: number };
  aboveP50Ms: number;
  aboveP99Ms: number;
  failures: number;
}

export async function s3Callback(stack: BenchStack, options: Options): Promise<S3Result> {
  const broker = stack.brokers[0]!;
  const agent = new Agent({ connections: 8 });
  await stack.control('consent', { mode: 'approve', licenseId: LICENSE });
  const callback: number[] = [];
  const direct: number[] = [];
  let failures = 0;
  const oneFlow = async (index: number): Promise<void> => {
    const xff = `10.250.${(index >> 8) & 255}.${index & 255}`;
    const start = await request(`${broker.url}${startPath()}`, {
      dispatcher: agent,
      headers: { 'x-forwarded-for': xff },
    });
    await start.body.dump();
    const setCookie = start.headers['set-cookie'];
    const cookie = String(Array.isArray(setCookie) ? setCookie[0] : setCookie).split(';')[0]!;
    const authorize = await request(String(start.headers.location), { dispatcher: agent });
    await authorize.body.dump();
    const back = String(authorize.headers.location);
    const t0 = performance.now();
    const answer = await request(back, {
      dispatcher: agent,
      headers: { cookie, 'x-forwarded-for': xff },
    });
    await answer.body.dump();
    const ms = performance.now() - t0;
    if (answer.statusCode !== 302 || !String(answer.headers.location).includes('handoff='))
      failures++;
    else callback.push(ms);
  };
  const oneDirect = async (): Promise<void> => {
    const redirectUri = `${broker.url}/auth/callback`;
    const authorize = new URL(`${stack.sandbox.url}/nl/api/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      client_id: CLIENT_ID,
      response_type: 'code',
      redirect_uri: redirectUri,
    }).toString();
    const answer = await request(authorize, { dispatcher: agent });
    await answer.body.dump();
    const code = new URL(String(answer.headers.location)).searchParams.get('code')!;
    const t0 = performance.now();
    const token = await request(`${stack.apiUrl}/oauth2/access_token`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'auth_code',
        code,
        redirect_uri: redirectUri,
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
      }).toString(),
    });
    await token.body.dump();
    direct.push(performance.now() - t0);
  };
  for (let i = 0; i < 10; i++) await oneFlow(60_000 + i); // warm-up
  for (let i = 0; i < options.callbackFlows; i++) {
    if (i % 2) {
      await oneFlow(i);
      await oneDirect();
    } else {
      await oneDirect();
      await oneFlow(i);
    }
  }
  await agent.close();
  callback.sort((a, b) => a - b);
  direct.sort((a, b) => a - b);
  const c = { p50: percentile(callback, 50), p99: percentile(callback, 99) };
  const d = { p50: percentile(direct, 50), p99: percentile(direct, 99) };
  return {
    flows: options.callbackFlows,
    callbackMs: c,
    directExchangeMs: d,
    aboveP50Ms: c.p50 - d.p50,
    aboveP99Ms: c.p99 - d.p99,
    failures,
  };
}

// ---------------------------------------------------------------- S5 soak

/**
 * One open-loop probe of the capacity search: its rate, its answers, whether the server kept up.
 */
export interface Probe {
  rate: number;
  p50Ms: number;
  p99Ms: number;
  keptUp: boolean;
}

/** The broker's capacity in the open loop, and the probes that found it (`openLoopCapacity`). */
export interface Capacity {
  rate: number;
  baselineP50Ms: number;
  probes: Probe[];
}

const PROBE_SECONDS = 8;

/**
 * The highest rate the server at `proc` keeps up with in the open loop, to within some 5 %. S5
 * soaks at half of it: half load. wrk's S1 throughput is what the server gives 50 busy connections
 * beside a light C generator; in the open loop, beside the Node generator on the same cores, it has
 * less to give, and half of wrk's figure was at or over it in most full runs (docs/performance.md,
 * "What was tried").
 *
 * A probe keeps up when every request was answered without error and the answers' p50 stayed
 * within three times the light baseline's (100 req/s, after 5 s at 1,000) plus 1 ms: over
 * capacity a queue grows for the whole probe and the median request waits in it (5 % over, some
 * 200 ms in an 8 s probe), while near it, under, the median waits a few milliseconds more at
 * most. The p50 decides, not the p99, which one stall of the host moves. Rates rise by half from
 * 1,000 req/s until one falls behind, then three bisections.
 */
export async function openLoopCapacity(
  proc: Proc,
  sessions: Session[],
  options: Options,
): Promise<Capacity> {
  const load = (rate: number, seconds: number) =>
    openLoop({ origin: proc.url, targets: viaBroker(sessions), rate, seconds });
  // The baseline is taken warm: on a process that has not yet served (a second instance in a full
  // run), the first seconds' answers carry the compiler's warm-up (3.6 ms at p50, warm 2.0).
  await load(1000, 5);
  const baseline = await load(100, 5);
  options.log(`  baseline at 100 req/s: answers p50 ${baseline.p50Ms.toFixed(1)} ms`);
  const probes: Probe[] = [];
  const probe = async (rate: number): Promise<boolean> => {
    const r = await load(rate, PROBE_SECONDS);
    const keptUp = r.errors === 0 && r.completed === r.sent && r.p50Ms <= 3 * baseline.p50Ms + 1;
    probes.push({ rate, p50Ms: r.p50Ms, p99Ms: r.p99Ms, keptUp });
    options.log(
      `  ${rate} req/s: answers p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms: ${keptUp ? 'kept up' : 'fell behind'}`,
    );
    return keptUp;
  };
  let low = 0;
  let high = Infinity;
  for (let rate = 1000; high === Infinity && rate < 100_000; rate = Math.round(rate * 1.5)) {
    if (await probe(rate)) low = rate;
    else high = rate;
  }
  for (let i = 0; i < 3 && high !== Infinity; i++) {
    const mid = Math.round((low + high) / 2);
    if (await probe(mid)) low = mid;
    else high = mid;
  }
  return { rate: low, baselineP50Ms: baseline.p50Ms, probes };
}

export interface S5Result {
  seconds: number;
  rate: number;
  /** The broker's open-loop capacity, when the rate was set at half of it (no `--soak-rate`). */
  capacity?: Capacity;
  warmupSeconds: number;
  rssAfterWarmupMb: number;
  rssEndMb: number;
  rssGrowthPct: number;
  /**
   * Growth over the soak's second half (its last three samples against three at the midpoint):
   * a leak goes on growing there, while a one-time step of V8's heap sizing after the warm-up
   * (its young generation doubling, some 50 MB) shows above but not here.
   */
  rssSecondHalfPct: number;
  rssSamplesMb: number[];
  /** The broker's heap (eld-hook.ts) at the RSS figure's first sample and at its end. */
  heapAfterWarmupMb: HeapMb | null;
  heapEndMb: HeapMb | null;
  eventLoopDelayMs: EventLoopDelay | null;
  latency: OpenLoopResult;
  /**
   * The same soak on the bare proxy, with the same hook: what the host alone does to an event
   * loop at this rate (a loaded or shared machine stalls every process now and then).
   */
  reference: { eventLoopDelayMs: EventLoopDelay | null; latency: OpenLoopResult };
}
export interface HeapMb {
  youngMb: number;
  oldMb: number;
}
export interface EventLoopDelay {
  p50: number;
  p99: number;
  max: number;
  /** Of the lateness, what the loop can have spent on a CPU (eld-hook.ts): its own stalls, bounded. */
  onCpuP99?: number;
  onCpuMax?: number;
}

export async function s5(
  stack: BenchStack,
  sessions: Session[],
  options: Options,
): Promise<S5Result> {
  const broker = stack.brokers[0]!;
  let capacity: Capacity | undefined;
  let rate = options.soakRate;
  if (rate === undefined) {
    // Searched on a second instance of the same broker, so that the probes over capacity leave
    // no queue's worth of heap in the soaked one's RSS.
    options.log("S5: the broker's capacity in the open loop (on a second instance)");
    capacity = await openLoopCapacity(stack.brokers[1]!, sessions, options);
    if (capacity.rate === 0) {
      throw new Error(
        'S5: the broker kept up with no probed rate (1,000 req/s, then three halvings of the gap below)',
      );
    }
    rate = Math.round(capacity.rate / 2);
  }
  options.log(`S5 soak: ${options.soakSeconds}s at ${rate} req/s (open loop)`);
  const warmupSeconds = Math.max(10, Math.round(options.soakSeconds * 0.1));
  const samples: { t: number; rss: number; heap: HeapMb | null }[] = [];
  const sample = (t: number) =>
    samples.push({ t, rss: rssBytes(broker.pid), heap: readHook(stack.eldFile)?.heap ?? null });
  const soaked = await soak(broker, stack.eldFile, sessions, rate, options, warmupSeconds, sample);
  sample(soaked.seconds);
  const after = samples.filter((s) => s.t >= warmupSeconds);
  const base = after[0]?.rss ?? NaN;
  // The end figure: the median of the last three samples (one GC cycle does not decide it).
  const end = median(after.slice(-3).map((s) => s.rss));
  const midpoint = median(
    samples
      .filter((s) => s.t >= soaked.seconds / 2)
      .slice(0, 3)
      .map((s) => s.rss),
  );

  const bareEld = join(stack.logDir, 'eld-bare.json');
  await stack.startBare(sessions[0]!.accessToken, [...options.bareArgs, '--import', ELD_HOOK], {
    BENCH_ELD_FILE: bareEld,
  });
  const reference = await soak(
    stack.bare!,
    bareEld,
    sessions,
    rate,
    options,
    warmupSeconds,
    () => {},
  );
  const mb = (bytes: number) => bytes / 1024 / 1024;
  return {
    seconds: options.soakSeconds,
    rate,
    ...(capacity && { capacity }),
    warmupSeconds,
    rssAfterWarmupMb: mb(base),
    rssEndMb: mb(end),
    rssGrowthPct: ((end - base) / base) * 100,
    rssSecondHalfPct: ((end - midpoint) / midpoint) * 100,
    rssSamplesMb: samples.map((s) => Math.round(mb(s.rss) * 10) / 10),
    heapAfterWarmupMb: after[0]?.heap ?? null,
    heapEndMb: samples.at(-1)?.heap ?? null,
    eventLoopDelayMs: soaked.eventLoopDelayMs,
    latency: soaked.latency,
    reference: { eventLoopDelayMs: reference.eventLoopDelayMs, latency: reference.latency },
  };
}

/** What eld-hook.ts last wrote to `eldFile`, or null before it first wrote. */
function readHook(eldFile: string): (EventLoopDelay & { heap?: HeapMb }) | null {
  try {
    return JSON.parse(readFileSync(eldFile, 'utf8')) as EventLoopDelay & { heap?: HeapMb };
  } catch {
    return null;
  }
}

/**
 * An open-loop soak of `proc` (which runs eld-hook.ts, writing to `eldFile`): the hook's histogram
 * is reset after `warmupSeconds`; `sample(t)` is called every 5 s.
 */
async function soak(
  proc: Proc,
  eldFile: string,
  sessions: Session[],
  rate: number,
  options: Options,
  warmupSeconds: number,
  sample: (t: number) => void,
): Promise<{ seconds: number; eventLoopDelayMs: EventLoopDelay | null; latency: OpenLoopResult }> {
  const started = performance.now();
  let warmedUp = false;
  let lastSample = 0;
  const latency = await openLoop({
    origin: proc.url,
    targets: viaBroker(sessions),
    rate,
    seconds: options.soakSeconds,
    onTick: () => {
      const t = (performance.now() - started) / 1000;
      if (!warmedUp && t >= warmupSeconds) {
        warmedUp = true;
        proc.signal('SIGUSR2'); // eld-hook: reset the event-loop delay histogram
      }
      if (t - lastSample >= 5) {
        lastSample = t;
        sample(t);
      }
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const eventLoopDelayMs = readHook(eldFile);
  return { seconds: (performance.now() - started) / 1000, eventLoopDelayMs, latency };
}
