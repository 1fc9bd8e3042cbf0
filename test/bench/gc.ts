/**
 * `node test/bench/gc.ts [--seconds 6] [--rounds 2]`: the young-generation collections of the
 * broker and of the bare proxy under S1's load (wrk, 50 connections, 1,000 sessions), each run
 * with `--trace-gc-nvp`: scavenges per 1,000 requests, their pauses, and the bytes each request
 * leaves surviving into the old generation (`promoted`), the figure behind long scavenges.
 * `--seed`: three full collections in each process during the warm-up, which puts a process that
 * can keep calls alive through old objects into that state for good (the bare proxy fell into it
 * by chance in some runs, before the broker's exchange).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { BenchStack } from './stack.ts';
import type { Proc } from './procs.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '2' },
    /** More V8 flags for the broker only, space-separated (`--broker-args=--max-semi-space-size=32`). */
    'broker-args': { type: 'string', default: '' },
    /** Three full collections in each process during the warm-up (gc-seed-hook.ts). */
    seed: { type: 'boolean', default: false },
  },
});
const SEED_HOOK = fileURLToPath(new URL('./gc-seed-hook.ts', import.meta.url));
const TRACE = ['--trace-gc-nvp', ...(values.seed ? ['--expose-gc', '--import', SEED_HOOK] : [])];

/** A number field of a --trace-gc-nvp line. */
const field = (line: string, name: string): number =>
  Number(new RegExp(`\\b${name}=([0-9.]+)`).exec(line)?.[1] ?? 0);

const stack = await BenchStack.start(1, {
  nodeArgs: [[...TRACE, ...values['broker-args'].split(' ').filter(Boolean)]],
  eventLoopHook: false,
});
try {
  const sessions = await stack.createSessions(1000);
  await stack.startBare(sessions[0]!.accessToken, TRACE);
  const lines = writeLines(stack.logDir, 'gc.txt', viaBroker(sessions));
  const measure = async (name: string, proc: Proc): Promise<string> => {
    const load = (seconds: number) =>
      wrk({ origin: proc.url, linesFile: lines, connections: 50, threads: 2, seconds });
    const warm = load(3);
    if (values.seed) setTimeout(() => proc.signal('SIGUSR2'), 500);
    await warm;
    const from = readFileSync(proc.logFile, 'utf8').length;
    const { requests } = await load(Number(values.seconds));
    const traced = readFileSync(proc.logFile, 'utf8').slice(from).split('\n');
    const scavenges = traced.filter((line) => line.includes(' gc=s '));
    const marks = traced.filter((line) => / gc=(mc|ms) /.test(line)).length;
    const pauses = scavenges.map((line) => field(line, 'pause')).sort((a, b) => a - b);
    const total = (name: string) => scavenges.reduce((sum, line) => sum + field(line, name), 0);
    return [
      name,
      requests,
      ((scavenges.length / requests) * 1000).toFixed(2),
      (pauses[Math.floor(pauses.length / 2)] ?? 0).toFixed(1),
      (pauses.at(-1) ?? 0).toFixed(1),
      ((total('pause') * 1000) / requests).toFixed(2),
      (total('promoted') / requests).toFixed(0),
      marks,
    ].join(' | ');
  };
  console.log(
    '| process | requests | scavenges per 1,000 req | pause p50, ms | pause max, ms | scavenging µs/req | promoted B/req | mark-compacts |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (let round = 1; round <= Number(values.rounds); round++) {
    console.log(`| ${await measure(`broker (round ${round})`, stack.brokers[0]!)} |`);
    console.log(`| ${await measure(`bare proxy (round ${round})`, stack.bare!)} |`);
  }
} finally {
  await stack.close();
}
