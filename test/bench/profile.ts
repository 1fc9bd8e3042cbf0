/**
 * `node test/bench/profile.ts [--seconds 15]`: the S1 load (wrk, 50 connections, 1,000 sessions)
 * on one broker started with `node --cpu-prof`, then the profile summarised by self time per
 * function and per package. `--main <file>`: another broker entry point (a worktree's, say). The .cpuprofile is kept under bench-results/ for Chrome DevTools.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { placeOf, type CallFrame } from './frames.ts';
import { BenchStack } from './stack.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '15' }, main: { type: 'string' } },
});
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = join(
  root,
  'bench-results',
  `profile-${new Date().toISOString().replace(/[:.]/g, '-')}`,
);
mkdirSync(dir, { recursive: true });

const stack = await BenchStack.start(1, {
  brokerNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  ...(values.main === undefined ? {} : { mains: [values.main] }),
});
try {
  const sessions = await stack.createSessions(1000);
  const file = writeLines(stack.logDir, 'broker.txt', viaBroker(sessions));
  const origin = stack.brokers[0]!.url;
  await wrk({ origin, linesFile: file, connections: 50, threads: 2, seconds: 3 });
  const result = await wrk({
    origin,
    linesFile: file,
    connections: 50,
    threads: 2,
    seconds: Number(values.seconds),
  });
  console.log(`broker under profile: ${result.rps.toFixed(0)} req/s, ${result.errors} errors`);
  await stack.brokers[0]!.stop('SIGTERM');
} finally {
  await stack.close();
}

interface Node {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
const name = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!name) throw new Error(`no profile written in ${dir}`);
const profile = JSON.parse(readFileSync(join(dir, name), 'utf8')) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) =>
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
);
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const pkg = new Map<string, number>();
for (const [id, us] of self) {
  const { fn: key, pkg: p } = placeOf(byId.get(id)!.callFrame, root);
  fn.set(key, (fn.get(key) ?? 0) + us);
  pkg.set(p, (pkg.get(p) ?? 0) + us);
}
const top = (map: Map<string, number>, n: number) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n');
console.log(`\nself time by package (${dir}/${name}):\n${top(pkg, 20)}`);
console.log(`\nself time by function:\n${top(fn, 30)}`);
