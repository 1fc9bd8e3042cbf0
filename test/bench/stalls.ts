/**
 * `node test/bench/stalls.ts [--server broker|bare] [--seconds 30] [--rate 1000]`: where one
 * server's slow answers in the open loop come from. After a wrk warm-up and a warm-up of the
 * generator's pool, every answer of one open loop is recorded with its due time; in the server, a
 * preloaded hook (stall-hook.ts) notes each collection and each time its loop ran more than 4 ms
 * late; Redis's commands are counted around the loop. Prints the answers' percentiles, what Redis
 * ran, the collections, the late ticks, and the stretches of answers above `--slow-ms` (8) with
 * the collections and late ticks in and just before each, so that a stall of the server's own (one
 * long collection, a Redis round trip) can be told from a host that holds every process up.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openLoop, percentile, wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { writtenFile } from './procs.ts';
import { BenchStack } from './stack.ts';

const { values } = parseArgs({
  options: {
    server: { type: 'string', default: 'broker' },
    seconds: { type: 'string', default: '30' },
    rate: { type: 'string', default: '1000' },
    'slow-ms': { type: 'string', default: '8' },
  },
});
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const slowMs = Number(values['slow-ms']);
const HOOK = fileURLToPath(new URL('./stall-hook.ts', import.meta.url));

const bare = values.server === 'bare';
const stallFile = join(tmpdir(), `baton-stalls-${process.pid}.json`);
const hooked = { nodeArgs: ['--import', HOOK], env: { BENCH_STALL_FILE: stallFile } };
const stack = await BenchStack.start(1, {
  eventLoopHook: false,
  ...(bare ? {} : { nodeArgs: [hooked.nodeArgs], envs: [hooked.env] }),
});
try {
  const sessions = await stack.createSessions(1000);
  const targets = viaBroker(sessions);
  if (bare) await stack.startBare(sessions[0]!.accessToken, hooked.nodeArgs, hooked.env);
  const server = bare ? stack.bare! : stack.brokers[0]!;
  const lines = writeLines(stack.logDir, 'lines.txt', targets);
  await wrk({ origin: server.url, linesFile: lines, connections: 50, threads: 2, seconds: 5 });
  const redisCalls = commandCounts(stack.redis.url);
  // Two seconds first, not counted, in which the generator's pool opens its connections.
  const { answers } = await openLoop({
    origin: server.url,
    targets,
    rate,
    seconds,
    warmupMs: 2000,
    keepAnswers: true,
  });
  const after = commandCounts(stack.redis.url);
  const { firstDueAt: startedAt, latencies } = answers!;
  const ran = Object.entries(after)
    .map(([name, calls]) => [name, calls - (redisCalls[name] ?? 0)] as const)
    .filter(([, calls]) => calls > 0)
    .map(([name, calls]) => `${name} ${calls}`);
  process.kill(server.pid, 'SIGUSR2');
  const { gcs, late } = JSON.parse(await writtenFile(stallFile)) as {
    gcs: number[][];
    late: number[][];
  };
  const within = ([at]: number[]) => at! >= startedAt && at! <= startedAt + seconds * 1000;
  const [inGcs, inLate] = [gcs.filter(within), late.filter(within)];

  const sorted = Float64Array.from(latencies).sort();
  const ms = (p: number) => percentile(sorted, p).toFixed(2);
  const sum = (rows: number[][]) => rows.reduce((total, row) => total + row[1]!, 0).toFixed(0);
  const longest = (rows: number[][]) => Math.max(0, ...rows.map((row) => row[1]!)).toFixed(1);
  const names: Record<number, string> = { 1: 'scavenges', 4: 'mark-compacts', 8: 'incremental' };
  const kinds = [...new Set(inGcs.map(([, , kind]) => kind!))].map((kind) => {
    const rows = inGcs.filter((row) => row[2] === kind);
    return `${rows.length} ${names[kind] ?? `of kind ${kind}`} (longest ${longest(rows)} ms)`;
  });
  console.log(`${values.server}, ${seconds}s at ${rate} req/s`);
  console.log(
    `answers, ms: p50 ${ms(50)} p90 ${ms(90)} p99 ${ms(99)} p99.9 ${ms(99.9)} max ${ms(100)}`,
  );
  console.log(`Redis ran (the warm-up's two seconds too): ${ran.join(', ') || 'nothing'}`);
  console.log(`collections: ${kinds.join(', ') || 'none'}; ${sum(inGcs)} ms in all`);
  console.log(
    `loop late by more than 4 ms: ${inLate.length} times, ${sum(inLate)} ms in all, longest ${longest(inLate)} ms`,
  );

  const stretches = slowStretches(latencies, slowMs);
  const slow = stretches.reduce((total, s) => total + s.count, 0);
  console.log(`answers above ${slowMs} ms: ${slow} in ${stretches.length} stretches; the largest:`);
  for (const s of stretches.sort((x, y) => y.count - x.count).slice(0, 12)) {
    const from = startedAt + (s.first * 1000) / rate;
    const to = startedAt + (s.last * 1000) / rate;
    const near = ([at]: number[]) => at! >= from - 60 && at! <= to;
    const what = [
      ...inGcs
        .filter(near)
        .map(([at, d, kind]) => `gc${kind} ${d!.toFixed(1)}@${(at! - from).toFixed(0)}`),
      ...inLate.filter(near).map(([at, d]) => `late ${d!.toFixed(1)}@${(at! - from).toFixed(0)}`),
    ];
    console.log(
      `  at ${(s.first / rate).toFixed(2)} s: ${s.count} answers, up to ${s.max.toFixed(1)} ms | ${what.join(', ')}`,
    );
  }
} finally {
  await stack.close();
  rmSync(stallFile, { force: true });
}

/** Runs of answers above `slowMs`, those less than 20 answers apart taken as one. */
function slowStretches(latencies: Float64Array, slowMs: number) {
  const stretches: { first: number; last: number; count: number; max: number }[] = [];
  latencies.forEach((ms, i) => {
    if (!(ms > slowMs)) return;
    const last = stretches.at(-1);
    if (last && i - last.last < 20) {
      Object.assign(last, { last: i, count: last.count + 1, max: Math.max(last.max, ms) });
    } else stretches.push({ first: i, last: i, count: 1, max: ms });
  });
  return stretches;
}

function commandCounts(url: string): Record<string, number> {
  const port = new URL(url).port;
  const info = execFileSync('redis-cli', ['-p', port, 'INFO', 'commandstats'], {
    encoding: 'utf8',
  });
  return Object.fromEntries(
    [...info.matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]),
  );
}
