import { execFile } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Pool, type Dispatcher } from 'undici';

const ROTATE_LUA = fileURLToPath(new URL('./rotate.lua', import.meta.url));
const run = promisify(execFile);

export interface WrkResult {
  requests: number;
  rps: number;
  errors: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
}

/** wrk against `origin`, rotating over the "path\ttoken" lines of `linesFile`. */
export async function wrk(options: {
  origin: string;
  linesFile: string;
  connections: number;
  threads: number;
  seconds: number;
  xff?: boolean;
}): Promise<WrkResult> {
  const args = [
    `-t${options.threads}`,
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--timeout',
    '5s',
    '-s',
    ROTATE_LUA,
    options.origin,
    '--',
    options.linesFile,
    ...(options.xff ? ['xff'] : []),
  ];
  const { stdout } = await run('wrk', args, { maxBuffer: 1 << 20 });
  const line = stdout.split('\n').find((text) => text.startsWith('WRKJSON '));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  const raw = JSON.parse(line.slice(8)) as Record<string, number>;
  const n = (key: string) => raw[key] ?? 0;
  return {
    requests: n('requests'),
    rps: n('requests') / (n('duration_us') / 1e6),
    errors: n('connect') + n('read') + n('write') + n('status') + n('timeout'),
    p50Ms: n('p50_us') / 1000,
    p90Ms: n('p90_us') / 1000,
    p99Ms: n('p99_us') / 1000,
  };
}

export interface Target {
  path: string;
  token: string;
}

export interface OpenLoopResult {
  sent: number;
  completed: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** How late the generator fired, p99 (its own scheduling noise). */
  lagP99Ms: number;
  /**
   * With `keepAnswers`: every counted request's latency in the order they were due (NaN: no
   * answer), and when the first was due, in wall-clock ms.
   */
  answers?: { firstDueAt: number; latencies: Float64Array };
}

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)]!;
}

export interface OpenLoopOptions {
  origin: string;
  targets: Target[];
  rate: number;
  seconds: number;
  connections?: number;
  /** Sent first at the same rate and not counted (`InterleavedOptions.warmupMs`). */
  warmupMs?: number;
  keepAnswers?: boolean;
}

/** Servers loaded in turns by one open loop (`openLoopInterleaved`). */
export interface InterleavedOptions {
  variants: { origin: string; targets: Target[] }[];
  rate: number;
  /** Each variant's share: the whole load lasts this times the number of variants. */
  seconds: number;
  /** How long each turn lasts; absent or 0: a whole share each, back to back. */
  sliceMs?: number;
  /**
   * A first turn of each variant, this long, sent and not counted: each variant's pool opens its
   * connections then, and the servers met a burst of new connections there, not the load measured.
   */
  warmupMs?: number;
  connections?: number;
  /** Each result with its `answers`. */
  keepAnswers?: boolean;
}

const GENERATOR = fileURLToPath(new URL('./loadgen-worker.ts', import.meta.url));

/**
 * A constant-rate open-loop generator (wrk has none): request i is due at start + i/rate and is
 * sent then whatever the earlier ones are doing (an undici Pool with many connections, so no
 * request waits for a free socket). Latency is measured from the request's due time, so a stall
 * anywhere (server or generator) counts against the run, not hidden by coordinated omission.
 *
 * The generator shares the machine with what it measures, so it is kept light and apart. It runs
 * on a worker thread of its own, with a young generation of a few MB: in the bench's own heap,
 * whose young generation grew to some 50 MB between collections, a scavenge took 50-100 ms, and
 * every request due meanwhile counted as that much slower. `onTick` is called every 10 ms on this
 * thread while it runs.
 */
export async function openLoop(
  options: OpenLoopOptions & { onTick?: () => void },
): Promise<OpenLoopResult> {
  const { origin, targets, onTick, ...rest } = options;
  const [result] = await openLoopInterleaved({
    ...rest,
    variants: [{ origin, targets }],
    ...(onTick ? { onTick } : {}),
  });
  return result!;
}

/**
 * The same open loop, its requests sent to each variant in turn for `sliceMs` at a time (the
 * first turn to `variants[0]`; without `sliceMs`: one after the other), each
 * variant's latencies counted apart. Servers measured one after the other see different stretches
 * of a shared host's noise, seconds of it at a time; in turns of a fraction of a second each sees
 * much the same, but is idle between its turns, which is not the load of a sustained rate: the
 * broker answered better so (docs/performance.md, "What was tried").
 */
export function openLoopInterleaved(
  options: InterleavedOptions & { onTick?: () => void },
): Promise<OpenLoopResult[]> {
  const { onTick, ...data } = options;
  const worker = new Worker(GENERATOR, {
    workerData: data,
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
  const ticking = onTick ? setInterval(onTick, 10) : undefined;
  return new Promise<OpenLoopResult[]>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the load generator exited with ${code}`)));
  }).finally(() => clearInterval(ticking));
}

/**
 * The generator itself (loadgen-worker.ts runs it on its thread). Each request is one small
 * handler on undici's dispatch interface (no promise, body stream or closure per call) and the
 * times go into arrays sized once, so that its own collections stay short. Every variant's pool
 * is open from the start and keeps its connections between turns.
 */
export async function generate(options: InterleavedOptions): Promise<OpenLoopResult[]> {
  const interval = 1000 / options.rate;
  const phases = schedule(options);
  const total = phases.at(-1)!.end;
  const uncounted = new Tally(total);
  const variants = options.variants.map((variant) => ({
    pool: new Pool(variant.origin, { connections: options.connections ?? 256 }),
    tally: new Tally(total),
    next: 0,
    requests: variant.targets.map((target) => ({
      path: target.path,
      method: 'GET' as const,
      headers: { authorization: `Bearer ${target.token}` },
    })),
  }));
  let settled = 0;
  let allSettled = (): void => {};
  const settle = (): void => {
    if (++settled === total) allSettled();
  };
  let sent = 0;
  let phase = 0;
  const start = performance.now() + 5;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        const due = start + sent * interval;
        while (sent >= phases[phase]!.end) phase++;
        const { variant: which, counted } = phases[phase]!;
        const variant = variants[which]!;
        const tally = counted ? variant.tally : uncounted;
        const index = tally.sent++;
        tally.lags[index] = now - due;
        if (index === 0) tally.firstDueAt = performance.timeOrigin + due;
        const shot = new Shot(due, tally, index, settle);
        try {
          variant.pool.dispatch(variant.requests[variant.next++ % variant.requests.length]!, shot);
        } catch {
          shot.onResponseError();
        }
        sent++;
      }
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    setTimeout(tick, 5);
  });
  if (settled < total) await new Promise<void>((resolve) => (allSettled = resolve));
  await Promise.all(variants.map(({ pool }) => pool.close()));
  return variants.map(({ tally }) => tally.result(options.keepAnswers === true));
}

/**
 * The turns, in order, each ending at request `end`: every variant's first counted turn right
 * after its warm-up (when back to back, a pool left idle while the others had their share would
 * have closed its connections again), the rest in rotation.
 */
export function schedule(
  options: InterleavedOptions,
): { variant: number; counted: boolean; end: number }[] {
  const share = Math.round(options.rate * options.seconds);
  const perTurn = options.sliceMs
    ? Math.max(1, Math.round((options.sliceMs / 1000) * options.rate))
    : share;
  const warm = Math.round(((options.warmupMs ?? 0) / 1000) * options.rate);
  const phases: { variant: number; counted: boolean; end: number }[] = [];
  let end = 0;
  const add = (variant: number, counted: boolean, requests: number): void => {
    if (requests > 0) phases.push({ variant, counted, end: (end += requests) });
  };
  for (let done = 0; done < share; done += perTurn) {
    options.variants.forEach((_, variant) => {
      if (done === 0) add(variant, false, warm);
      add(variant, true, Math.min(perTurn, share - done));
    });
  }
  return phases;
}

/** One variant's requests: when each was answered and how late it was sent. */
class Tally {
  sent = 0;
  completed = 0;
  errors = 0;
  firstDueAt = NaN;
  /** In the order they were answered. */
  readonly latencies: Float64Array;
  /** In the order they were due. */
  readonly byDue: Float64Array;
  readonly lags: Float64Array;

  constructor(size: number) {
    this.latencies = new Float64Array(size);
    this.byDue = new Float64Array(size).fill(NaN);
    this.lags = new Float64Array(size);
  }

  result(keepAnswers: boolean): OpenLoopResult {
    const done = this.latencies.subarray(0, this.completed).sort();
    return {
      sent: this.sent,
      completed: this.completed,
      errors: this.errors,
      p50Ms: percentile(done, 50),
      p99Ms: percentile(done, 99),
      maxMs: this.completed > 0 ? done[this.completed - 1]! : NaN,
      lagP99Ms: percentile(this.lags.subarray(0, this.sent).sort(), 99),
      ...(keepAnswers
        ? { answers: { firstDueAt: this.firstDueAt, latencies: this.byDue.slice(0, this.sent) } }
        : {}),
    };
  }
}

/** One open-loop request, counted in its variant's tally when answered, or as failed. */
class Shot implements Dispatcher.DispatchHandler {
  #status = 0;
  readonly #due: number;
  #tally: Tally | null;
  /** Its place among its tally's requests, in the order they were due. */
  readonly #index: number;
  readonly #settle: () => void;

  constructor(due: number, tally: Tally, index: number, settle: () => void) {
    this.#due = due;
    this.#tally = tally;
    this.#index = index;
    this.#settle = settle;
  }

  onRequestStart(): void {}

  onResponseStart(_controller: Dispatcher.DispatchController, status: number): void {
    this.#status = status;
  }

  onResponseData(): void {}

  onResponseEnd(): void {
    this.#end(this.#status);
  }

  onResponseError(): void {
    this.#end(0);
  }

  /** `status` 0: failed without an answer. */
  #end(status: number): void {
    const tally = this.#tally;
    if (!tally) return;
    this.#tally = null;
    if (status > 0) {
      const ms = performance.now() - this.#due;
      tally.latencies[tally.completed++] = ms;
      tally.byDue[this.#index] = ms;
    }
    if (status === 0 || status >= 400) tally.errors++;
    this.#settle();
  }
}
