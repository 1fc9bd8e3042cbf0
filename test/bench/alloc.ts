/**
 * `node test/bench/alloc.ts [--seconds 8] [--main <file>]`: what one proxied call allocates, under
 * S1's load (wrk, 50 connections, 1,000 sessions): V8's sampling heap profiler counts every
 * allocation (also those the next scavenge frees) for `seconds`, then the bytes per request are
 * summed by function and by package. The profile is kept under bench-results/ (Chrome DevTools
 * opens .heapprofile files).
 *
 * `--survivors`: only the allocations no scavenge freed (the bytes promoted to the old generation,
 * and what is still alive when it stops; a scavenge is forced first). `--connections N`: wrk's
 * connections (few keep few calls in flight, so that survivors are not just the calls under way).
 * `--bare`: the bare proxy instead (baseline b, the same load), the floor a Node proxy over undici
 * allocates.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { placeOf, type CallFrame } from './frames.ts';
import { writtenFile } from './procs.ts';
import { BenchStack } from './stack.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    main: { type: 'string' },
    survivors: { type: 'boolean', default: false },
    bare: { type: 'boolean', default: false },
    connections: { type: 'string', default: '50' },
  },
});
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = join(root, 'bench-results', `alloc-${new Date().toISOString().replace(/[:.]/g, '-')}`);
mkdirSync(dir, { recursive: true });
const file = join(dir, values.bare ? 'bare.heapprofile' : 'broker.heapprofile');
const HOOK = fileURLToPath(new URL('./alloc-hook.ts', import.meta.url));
const hookEnv = {
  BENCH_ALLOC_FILE: file,
  ...(values.survivors ? { BENCH_ALLOC_SURVIVORS: '1' } : {}),
};
const hookArgs = ['--import', HOOK, ...(values.survivors ? ['--expose-gc'] : [])];

const stack = await BenchStack.start(1, {
  nodeArgs: [values.bare ? [] : hookArgs],
  envs: [values.bare ? {} : hookEnv],
  eventLoopHook: false,
  ...(values.main === undefined ? {} : { mains: [values.main] }),
});
let requests = 0;
let profile: string;
try {
  const sessions = await stack.createSessions(1000);
  const lines = writeLines(stack.logDir, 'broker.txt', viaBroker(sessions));
  if (values.bare) await stack.startBare(sessions[0]!.accessToken, hookArgs, hookEnv);
  const measured = values.bare ? stack.bare! : stack.brokers[0]!;
  const load = (seconds: number) =>
    wrk({
      origin: measured.url,
      linesFile: lines,
      connections: Number(values.connections),
      threads: Math.min(2, Number(values.connections)),
      seconds,
    });
  await load(3);
  measured.signal('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 200));
  const result = await load(Number(values.seconds));
  requests = result.requests;
  measured.signal('SIGUSR2');
  profile = await writtenFile(file);
  console.log(
    `${result.requests} requests at ${result.rps.toFixed(0)} req/s, ${result.errors} errors`,
  );
} finally {
  await stack.close();
}

interface Node {
  callFrame: CallFrame;
  selfSize: number;
  children: Node[];
}
const { head } = JSON.parse(profile) as { head: Node };
const fn = new Map<string, number>();
const pkg = new Map<string, number>();
let total = 0;
const walk = (node: Node): void => {
  const { fn: key, pkg: p } = placeOf(node.callFrame, root);
  fn.set(key, (fn.get(key) ?? 0) + node.selfSize);
  pkg.set(p, (pkg.get(p) ?? 0) + node.selfSize);
  total += node.selfSize;
  node.children.forEach(walk);
};
walk(head);
const perCall = (bytes: number) => `${(bytes / requests).toFixed(0).padStart(6)} B`;
const top = (map: Map<string, number>, n: number) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([k, bytes]) => `${perCall(bytes)}  ${((bytes / total) * 100).toFixed(1).padStart(5)}%  ${k}`,
    )
    .join('\n');
const report = `allocated per request: ${perCall(total)}\n\nby package:\n${top(pkg, 15)}\n\nby function:\n${top(fn, 40)}\n`;
writeFileSync(join(dir, 'summary.txt'), report);
console.log(report);
