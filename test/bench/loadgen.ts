import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Pool } from 'undici';

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

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)]!;
}

/**
 * A constant-rate open-loop generator (wrk has none): request i is due at start + i/rate and is
 * sent then whatever the earlier ones are doing (an undici Pool with many connections, so no
 * request waits for a free socket). Latency is measured from the request's due time, so a stall
 * anywhere (server or generator) counts against the run, not hidden by coordinated omission.
 */
export async function openLoop(options: {
  origin: string;
  targets: Target[];
  rate: number;
  seconds: number;
  connections?: number;
  onTick?: () => void;
}): Promise<OpenLoopResult> {
  const pool = new Pool(options.origin, { connections: options.connections ?? 256 });
  const interval = 1000 / options.rate;
  const total = Math.round(options.rate * options.seconds);
  const latencies: number[] = [];
  const lags: number[] = [];
  let errors = 0;
  let sent = 0;
  const inflight = new Set<Promise<void>>();
  const start = performance.now() + 5;
  const fire = (i: number, due: number): void => {
    const target = options.targets[i % options.targets.length]!;
    lags.push(performance.now() - due);
    const done = pool
      .request({
        path: target.path,
        method: 'GET',
        headers: { authorization: `Bearer ${target.token}` },
      })
      .then(async (response) => {
        await response.body.dump();
        if (response.statusCode >= 400) errors++;
        latencies.push(performance.now() - due);
      })
      .catch(() => {
        errors++;
      })
      .finally(() => inflight.delete(done));
    inflight.add(done);
  };
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        fire(sent, start + sent * interval);
        sent++;
      }
      options.onTick?.();
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    setTimeout(tick, 5);
  });
  await Promise.all(inflight);
  await pool.close();
  latencies.sort((a, b) => a - b);
  lags.sort((a, b) => a - b);
  return {
    sent,
    completed: latencies.length,
    errors,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? NaN,
    lagP99Ms: percentile(lags, 99),
  };
}
