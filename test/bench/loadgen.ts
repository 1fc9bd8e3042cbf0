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
export function openLoop(
  options: OpenLoopOptions & { onTick?: () => void },
): Promise<OpenLoopResult> {
  const { onTick, ...data } = options;
  const worker = new Worker(GENERATOR, {
    workerData: data,
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  });
  const ticking = onTick ? setInterval(onTick, 10) : undefined;
  return new Promise<OpenLoopResult>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the load generator exited with ${code}`)));
  }).finally(() => clearInterval(ticking));
}

/**
 * The generator itself (loadgen-worker.ts runs it on its thread). Each request is one small
 * handler on undici's dispatch interface (no promise, body stream or closure per call) and the
 * times go into arrays sized once, so that its own collections stay short.
 */
export async function generate(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const pool = new Pool(options.origin, { connections: options.connections ?? 256 });
  const interval = 1000 / options.rate;
  const total = Math.round(options.rate * options.seconds);
  const latencies = new Float64Array(total);
  const lags = new Float64Array(total);
  const requests = options.targets.map((target) => ({
    path: target.path,
    method: 'GET' as const,
    headers: { authorization: `Bearer ${target.token}` },
  }));
  let completed = 0;
  let errors = 0;
  let settled = 0;
  let sent = 0;
  let allSettled = (): void => {};
  /** A request's end: `status` 0 when it failed without an answer. */
  const finish = (due: number, status: number): void => {
    if (status > 0) latencies[completed++] = performance.now() - due;
    if (status === 0 || status >= 400) errors++;
    if (++settled === total) allSettled();
  };
  const start = performance.now() + 5;
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        const due = start + sent * interval;
        lags[sent] = now - due;
        const request = requests[sent % requests.length]!;
        const shot = new Shot(due, finish);
        try {
          pool.dispatch(request, shot);
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
  await pool.close();
  const done = latencies.subarray(0, completed).sort();
  lags.sort();
  return {
    sent,
    completed,
    errors,
    p50Ms: percentile(done, 50),
    p99Ms: percentile(done, 99),
    maxMs: completed > 0 ? done[completed - 1]! : NaN,
    lagP99Ms: percentile(lags, 99),
  };
}

/** One open-loop request, told to `finish` with its status when answered, or 0 when it failed. */
class Shot implements Dispatcher.DispatchHandler {
  #status = 0;
  readonly #due: number;
  #finish: ((due: number, status: number) => void) | null;

  constructor(due: number, finish: (due: number, status: number) => void) {
    this.#due = due;
    this.#finish = finish;
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

  #end(status: number): void {
    this.#finish?.(this.#due, status);
    this.#finish = null;
  }
}
