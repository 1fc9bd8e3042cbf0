/**
 * `node test/bench/profile.ts [--seconds 15]`: the S1 load (wrk, 50 connections, 1,000 sessions)
 * on one broker started with `node --cpu-prof`, then on the bare proxy (baseline b) the same way,
 * and the two profiles side by side: each package's and function's self time as µs per call, and
 * what the broker spends over the bare proxy. `--only broker`: the broker alone. `--main <file>`:
 * another broker entry point (a worktree's, say). `--rate R`: both at a fixed R req/s (S1's
 * open-loop generator) instead of as fast as they go, so that neither batches more work per wake-up
 * than the other. `--pin`: as run.ts --pin. `--long-ms N`: also the main thread's busy stretches
 * (no idle sample, so no tick of the loop) and what those of N ms or more held. The .cpuprofile
 * files are kept under bench-results/ for Chrome DevTools.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openLoop, percentile, wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { placeOf, type CallFrame } from './frames.ts';
import { cpuMs, pinProcesses, type Proc } from './procs.ts';
import { BenchStack } from './stack.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    main: { type: 'string' },
    only: { type: 'string' },
    rate: { type: 'string' },
    pin: { type: 'boolean', default: false },
    'long-ms': { type: 'string' },
  },
});
// As run.ts --pin: the process under test on CPUs of its own, before any child starts.
if (values.pin) pinProcesses(cpus().length);
const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = join(
  root,
  'bench-results',
  `profile-${new Date().toISOString().replace(/[:.]/g, '-')}`,
);
const dirOf = (name: string): string => join(dir, name);
mkdirSync(dirOf('broker'), { recursive: true });
mkdirSync(dirOf('bare'), { recursive: true });
const profArgs = (name: string): string[] => [
  '--cpu-prof',
  `--cpu-prof-dir=${dirOf(name)}`,
  // Finer samples when long stretches are asked for: a stretch is told apart at this grain.
  ...(values['long-ms'] === undefined ? [] : ['--cpu-prof-interval=100']),
];

/** Per call: each package's and function's self time, the main thread's busy time, all threads' CPU. */
interface Costs {
  rps: number;
  busyUs: number;
  cpuUs: number;
  pkg: Map<string, number>;
  fn: Map<string, number>;
  /** With `--long-ms`: the main thread's busy stretches of at least that long. */
  long?: Long;
}

/**
 * The stretches in which the main thread never went idle (the event loop could not tick): how
 * many of at least `--long-ms` per second, how long the longest were, and what they were spent
 * on, as a share of all their time, beside the share of all busy time.
 */
interface Long {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  share: Map<string, number>;
  overall: Map<string, number>;
}

/** V8 stamps a profile's samples in µs of the clock `process.hrtime` reads. */
const now = (): number => Number(process.hrtime.bigint() / 1000n);

const stack = await BenchStack.start(1, {
  brokerNodeArgs: profArgs('broker'),
  ...(values.main === undefined ? {} : { mains: [values.main] }),
});
const costs: Record<string, Costs> = {};
try {
  const sessions = await stack.createSessions(1000);
  const targets = viaBroker(sessions);
  const file = writeLines(stack.logDir, 'broker.txt', targets);
  const drive = async (origin: string, seconds: number) =>
    values.rate === undefined
      ? wrk({ origin, linesFile: file, connections: 50, threads: 2, seconds })
      : openLoop({ origin, targets, rate: Number(values.rate), seconds }).then((r) => ({
          requests: r.completed,
          rps: r.completed / seconds,
          errors: r.errors,
        }));
  const load = async (name: string, proc: Proc): Promise<void> => {
    await drive(proc.url, 3);
    const cpuBefore = cpuMs(proc.pid);
    const from = now();
    const result = await drive(proc.url, Number(values.seconds));
    const window = { from, to: now(), calls: result.requests };
    const cpuUs = ((cpuMs(proc.pid) - cpuBefore) * 1000) / result.requests;
    await proc.stop('SIGTERM');
    costs[name] = { ...summarise(name, window), rps: result.rps, cpuUs };
    console.log(`${name} under profile: ${result.rps.toFixed(0)} req/s, ${result.errors} errors`);
  };
  await load('broker', stack.brokers[0]!);
  if (values.only !== 'broker') {
    await stack.startBare(sessions[0]!.accessToken, profArgs('bare'));
    await load('bare', stack.bare!);
  }
} finally {
  await stack.close();
}

interface Node {
  id: number;
  callFrame: CallFrame;
}

/**
 * The profile written in `name`'s folder, as self time per call: the samples taken while the
 * measured load ran (`from`-`to`, so neither start-up nor the warm-up), over its `calls`.
 */
function summarise(
  name: string,
  { from, to, calls }: { from: number; to: number; calls: number },
): Omit<Costs, 'rps' | 'cpuUs'> {
  const file = readdirSync(dirOf(name)).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${dirOf(name)}`);
  const profile = JSON.parse(readFileSync(join(dirOf(name), file), 'utf8')) as {
    nodes: Node[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  let busyUs = 0;
  let at = profile.startTime;
  const longMs = values['long-ms'];
  const stretches: { us: number; pkg: Map<string, number> }[] = [];
  let stretch: (typeof stretches)[number] | null = null;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    const place = placeOf(byId.get(id)!.callFrame, root);
    if (at < from || at > to || place.pkg === '((idle))') {
      if (stretch) stretches.push(stretch);
      stretch = null;
      return;
    }
    const us = delta / calls;
    busyUs += us;
    fn.set(place.fn, (fn.get(place.fn) ?? 0) + us);
    pkg.set(place.pkg, (pkg.get(place.pkg) ?? 0) + us);
    if (longMs === undefined) return;
    stretch ??= { us: 0, pkg: new Map() };
    stretch.us += delta;
    stretch.pkg.set(place.pkg, (stretch.pkg.get(place.pkg) ?? 0) + delta);
  });
  if (longMs === undefined) return { busyUs, pkg, fn };
  if (stretch) stretches.push(stretch);
  const longUs = Number(longMs) * 1000;
  const long = stretches.filter((each) => each.us >= longUs);
  const lengths = stretches.map((each) => each.us / 1000).sort((a, b) => a - b);
  const share = new Map<string, number>();
  const longTotal = long.reduce((sum, each) => sum + each.us, 0);
  for (const each of long)
    for (const [key, us] of each.pkg) share.set(key, (share.get(key) ?? 0) + us / longTotal);
  const overall = new Map([...pkg].map(([key, us]) => [key, us / busyUs]));
  return {
    busyUs,
    pkg,
    fn,
    long: {
      perSecond: long.length / ((to - from) / 1e6),
      p50Ms: percentile(lengths, 50),
      p99Ms: percentile(lengths, 99),
      maxMs: lengths.at(-1) ?? 0,
      share,
      overall,
    },
  };
}

const us = (n: number | undefined): string => (n ?? 0).toFixed(1).padStart(6);
const broker = costs.broker!;
const bare = costs.bare;
/**
 * The `n` largest of `pick`: by the broker's own cost (`by: 'cost'`), or by how far it is from the
 * bare proxy's (`by: 'over'`, the broker's own without a bare proxy).
 */
function table(
  title: string,
  pick: (c: Costs) => Map<string, number>,
  n: number,
  by: 'cost' | 'over',
): string {
  const keys = new Set([...pick(broker).keys(), ...(bare ? pick(bare).keys() : [])]);
  const rows = [...keys]
    .map((key) => {
      const b = pick(broker).get(key) ?? 0;
      const base = bare ? (pick(bare).get(key) ?? 0) : 0;
      return { key, b, base, over: b - base };
    })
    .sort((x, y) => (by === 'cost' ? y.b - x.b : Math.abs(y.over) - Math.abs(x.over)))
    .slice(0, n)
    .map((r) =>
      bare
        ? `${us(r.b)} ${us(r.base)} ${us(r.over)}  ${r.key}`
        : `${us(r.b)}  ${r.key} (${((r.b / broker.busyUs) * 100).toFixed(1)}%)`,
    );
  const head = bare ? 'broker   bare   over  (µs per call)' : 'broker  (µs per call)';
  return `\n${title} (${dir}):\n${head}\n${rows.join('\n')}`;
}
console.log(
  `\nper call: main thread busy ${us(broker.busyUs)} µs broker${bare ? `, ${us(bare.busyUs)} µs bare proxy` : ''}; ` +
    `all threads ${us(broker.cpuUs)} µs broker${bare ? `, ${us(bare.cpuUs)} µs bare proxy` : ''}`,
);
console.log(table('self time by package, largest first', (c) => c.pkg, 20, 'cost'));
console.log(
  table('self time by function, furthest from the bare proxy first', (c) => c.fn, 40, 'over'),
);

/** With `--long-ms`: each process's long busy stretches, and what they hold beside all busy time. */
for (const [name, c] of Object.entries(costs)) {
  if (!c.long) continue;
  const { perSecond, p50Ms, p99Ms, maxMs, share, overall } = c.long;
  const rows = [...share]
    .sort((x, y) => y[1] - x[1])
    .slice(0, 12)
    .map(([key, part]) => {
      const pct = (n: number | undefined) => `${((n ?? 0) * 100).toFixed(1).padStart(5)}%`;
      return `${pct(part)} ${pct(overall.get(key))}  ${key}`;
    });
  console.log(
    `\n${name}: busy stretches (the loop never idle) p50 ${p50Ms.toFixed(2)} ms, p99 ${p99Ms.toFixed(2)} ms, ` +
      `max ${maxMs.toFixed(2)} ms; ${perSecond.toFixed(1)} a second of at least ${values['long-ms']} ms.\n` +
      `share of those long stretches, share of all busy time:\n${rows.join('\n')}`,
  );
}
