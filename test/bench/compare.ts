/**
 * `node test/bench/compare.ts --revs 5c76e9a,HEAD~2,work,work+--max-semi-space-size=32`: what each
 * change to the broker (or Node option, or environment: `work+OTEL_TRACES_EXPORTER=otlp`) bought,
 * measured in one run. Every revision's broker (`work`: the working tree) runs as its own process
 * beside the same upstream, bare proxy, Redis and 1,000 sessions, and they take turns in rotated
 * rounds (S1's method): throughput and CPU per request at 50 connections, p50 with one
 * connection, and p99 in the open loop at `--open-rate` requests a second (1,000 as S1's; 0: not
 * measured), as S1's: back to back, or in turns of `--open-slice` ms. Each figure is a ratio
 * against the bare proxy (or the upstream) of the same round. Revisions are checked out as
 * detached git worktrees, each installed (offline where it can) from this checkout's pnpm store.
 * A revision before data format 2 (release 0.1.0, 77b69d7) needs `--data-format 1`: the sessions
 * are then written as it left them, which this checkout reads too (format1.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openLoopInterleaved, wrk } from './loadgen.ts';
import { cpuMs, type Proc } from './procs.ts';
import { direct, median, spread, viaBroker, writeLines, type Spread } from './scenarios.ts';
import { asFormat1 } from './format1.ts';
import { BenchStack } from './stack.ts';
import { checkoutRevision, git } from '../support/revision.ts';

const { values } = parseArgs({
  options: {
    revs: { type: 'string', default: 'HEAD~1,work' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '8' },
    warmup: { type: 'string', default: '3' },
    sessions: { type: 'string', default: '1000' },
    'open-rate': { type: 'string', default: '1000' },
    'open-slice': { type: 'string', default: '0' },
    /** 1: the sessions as data format 1 left them, for a revision before format 2 (77b69d7). */
    'data-format': { type: 'string', default: '2' },
  },
});
const root = fileURLToPath(new URL('../../', import.meta.url));
const rounds = Number(values.rounds);
const seconds = Number(values.duration);
const openRate = Number(values['open-rate']);
const openSliceMs = Number(values['open-slice']);
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

/** The broker entry point of `rev`, in a worktree of its own (made once per commit). */
const brokerMain = (rev: string): string =>
  rev === 'work'
    ? join(root, 'server/src/main.ts')
    : join(checkoutRevision(rev).dir, 'server/src/main.ts');

/**
 * `rev` or `rev+--node-flag+NAME=value+…`: the same revision may run with other Node options or
 * other environment variables.
 */
const specs = values.revs.split(',').map((spec) => spec.trim().split('+'));
const isEnv = (part: string) => /^[A-Z_][A-Z0-9_]*=/.test(part);
const revs = specs.map(([rev]) => rev!);
const labels = specs.map(([rev, ...flags]) =>
  [rev === 'work' ? 'work' : `${rev} (${git('rev-parse', '--short', rev!)})`, ...flags].join(' '),
);
const stack = await BenchStack.start(revs.length, {
  mains: revs.map(brokerMain),
  nodeArgs: specs.map(([, ...flags]) => flags.filter((flag) => !isEnv(flag))),
  envs: specs.map(([, ...flags]) =>
    Object.fromEntries(
      flags
        .filter(isEnv)
        .map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)]),
    ),
  ),
  eventLoopHook: false,
});
try {
  const sessions = await stack.createSessions(Number(values.sessions));
  if (values['data-format'] === '1') await asFormat1(stack, sessions);
  await stack.startBare(sessions[0]!.accessToken);
  const [brokered, straight] = [viaBroker(sessions), direct(sessions)];
  const brokerLines = writeLines(stack.logDir, 'broker.txt', brokered);
  const directLines = writeLines(stack.logDir, 'direct.txt', straight);
  const variants: { name: string; proc: Proc; lines: string; targets: typeof brokered }[] = [
    { name: 'a', proc: stack.sandbox, lines: directLines, targets: straight },
    { name: 'b', proc: stack.bare!, lines: brokerLines, targets: brokered },
    ...stack.brokers.map((proc, index) => ({
      name: labels[index]!,
      proc,
      lines: brokerLines,
      targets: brokered,
    })),
  ];
  const run = (v: (typeof variants)[number], connections: number, time: number) =>
    wrk({
      origin: v.proc.url,
      linesFile: v.lines,
      connections,
      threads: connections === 1 ? 1 : 2,
      seconds: time,
    });
  const rotate = <T>(items: T[], by: number): T[] =>
    items.map((_, i) => items[(i + by) % items.length]!);

  log(`warm-up ${values.warmup}s per variant`);
  for (const v of variants) await run(v, 50, Number(values.warmup));

  const rps: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  const redisCpu: Record<string, number[]> = {};
  const p50: Record<string, number[]> = {};
  const p99: Record<string, number[]> = {};
  const push = (map: Record<string, number[]>, key: string, value: number) =>
    (map[key] ??= []).push(value);
  for (let round = 0; round < rounds; round++) {
    const now: Record<string, { rps: number; cpu: number }> = {};
    for (const v of rotate(variants, round)) {
      const before = cpuMs(v.proc.pid);
      const redisBefore = cpuMs(stack.redisPid);
      const result = await run(v, 50, seconds);
      if (result.errors > 0) throw new Error(`${v.name}: ${result.errors} errors`);
      push(redisCpu, v.name, ((cpuMs(stack.redisPid) - redisBefore) * 1000) / result.requests);
      now[v.name] = {
        rps: result.rps,
        cpu: ((cpuMs(v.proc.pid) - before) * 1000) / result.requests,
      };
    }
    const one: Record<string, number> = {};
    for (const v of rotate(variants, round)) one[v.name] = (await run(v, 1, seconds)).p50Ms;
    // S1's open loop, as there; the upstream's request log emptied first.
    const tail: Record<string, number> = {};
    if (openRate > 0) {
      const order = rotate(variants, round);
      await stack.control('reset', {});
      const results = await openLoopInterleaved({
        variants: order.map((v) => ({ origin: v.proc.url, targets: v.targets })),
        rate: openRate,
        seconds,
        sliceMs: openSliceMs,
        warmupMs: 500,
      });
      order.forEach((v, i) => {
        const result = results[i]!;
        if (result.errors > 0)
          throw new Error(`${v.name}: ${result.errors} errors in the open loop`);
        tail[v.name] = result.p99Ms;
      });
    }
    for (const v of variants.slice(2)) {
      push(rps, v.name, now[v.name]!.rps / now.b!.rps);
      push(cpu, v.name, now[v.name]!.cpu / now.b!.cpu);
      push(p50, v.name, one[v.name]! - one.a!);
      if (openRate > 0) push(p99, v.name, tail[v.name]! / tail.b!);
    }
    push(p50, 'b', one.b! - one.a!);
    const open = (name: string) => (openRate > 0 ? ` p99 ${tail[name]!.toFixed(1)}ms` : '');
    log(
      `round ${round + 1}: ${variants.map((v) => `${v.name} ${now[v.name]!.rps.toFixed(0)}/s ${now[v.name]!.cpu.toFixed(0)}µs ${one[v.name]!.toFixed(3)}ms${open(v.name)}`).join(' | ')}`,
    );
  }

  const f = (s: Spread, digits: number) =>
    `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
  const rows = variants.slice(2).map((v) => {
    const [r, c, p] = [spread(rps[v.name]!), spread(cpu[v.name]!), spread(p50[v.name]!)];
    const tail = openRate > 0 ? `${f(spread(p99[v.name]!), 2)}x` : 'not measured';
    return `| ${v.name} | ${f(r, 2)} | ${f(c, 2)}x | ${f(p, 3)} | ${tail} | ${f(spread(redisCpu[v.name]!), 1)} |`;
  });
  const md = [
    `Rounds ${rounds} × ${seconds}s, ${sessions.length} sessions; bare proxy's own added p50 ${median(p50.b!).toFixed(3)} ms.`,
    '',
    `| broker | throughput ÷ bare proxy | CPU/req ÷ bare proxy | added p50 over direct, 1 conn, ms | open-loop p99 at ${openRate} req/s ÷ bare proxy | Redis CPU µs/req |`,
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  const out = join(
    root,
    'bench-results',
    `compare-${new Date().toISOString().replace(/[:.]/g, '-')}`,
  );
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.md'), md);
  writeFileSync(
    join(out, 'results.json'),
    JSON.stringify({ revs: labels, rps, cpu, p50, p99, redisCpu }, null, 2),
  );
  console.log(`\n${md}\nwritten to ${out}`);
} finally {
  await stack.close();
}
