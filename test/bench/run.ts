/**
 * Baton's benchmarks, S1 to S6 (docs/performance.md). `node test/bench/run.ts` runs them all;
 * `--smoke` runs only the refresh storm (S2) briefly and S6's Redis layout at 2,000 sessions, and
 * exits non-zero when one of their hard invariants breaks (exactly one token call, no
 * invalid_grant, no non-2xx; every key with a TTL, no key shared by sessions over its bound,
 * every kind of key documented, the made sessions' keys the real flow's). Each run writes
 * bench-results/<stamp>/results.json and results.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { s4, type S4Result } from './s4-browser.ts';
import {
  s1,
  s2,
  s3Callback,
  s5,
  type Options,
  type S1Result,
  type S2Result,
  type S3Result,
  type S5Result,
} from './scenarios.ts';
import { pinProcesses } from './procs.ts';
import { podHeapArgs, s6, s6Rows, s6Table, type S6Result } from './s6.ts';
import { BenchStack } from './stack.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    only: { type: 'string', default: 'S1,S2,S3,S4,S5,S6' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '5' },
    sessions: { type: 'string', default: '1000' },
    'storm-reps': { type: 'string', default: '5' },
    'callback-flows': { type: 'string', default: '300' },
    opens: { type: 'string', default: '20' },
    'open-slice': { type: 'string', default: '0' },
    soak: { type: 'string', default: '600' },
    'soak-rate': { type: 'string' },
    'keep-logs': { type: 'boolean', default: false },
    pin: { type: 'boolean', default: false },
    'broker-args': { type: 'string', default: '' },
    'bare-args': { type: 'string', default: '' },
    's6-sizes': { type: 'string', default: '1000,10000,30000,100000' },
    's6-per-session': { type: 'string', default: '1,3' },
    's6-real': { type: 'string', default: '200' },
    's6-rounds': { type: 'string', default: '3' },
    's6-seconds': { type: 'string', default: '5' },
  },
});

const smoke = values.smoke;
const only = new Set(
  smoke ? ['S2', 'S6'] : values.only.split(',').map((s) => s.trim().toUpperCase()),
);
const numbers = (list: string) => list.split(',').map((n) => Number(n.trim()));
const options: Options = {
  rounds: Number(values.rounds),
  seconds: Number(values.duration),
  warmup: Number(values.warmup),
  connections: 50,
  openRate: 1000,
  openSliceMs: Number(values['open-slice']),
  stormSize: 500,
  stormReps: smoke ? 2 : Number(values['storm-reps']),
  stormDelays: [0, 50, 300],
  callbackFlows: Number(values['callback-flows']),
  opens: Number(values.opens),
  soakSeconds: Number(values.soak),
  soakRate: values['soak-rate'] === undefined ? undefined : Number(values['soak-rate']),
  bareArgs: values['bare-args'].split(' ').filter(Boolean),
  log: (line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
};

const root = fileURLToPath(new URL('../../', import.meta.url));
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const outDir = join(root, 'bench-results', `${stamp}${smoke ? '-smoke' : ''}`);

interface Results {
  started: string;
  mode: 'smoke' | 'full';
  options: Omit<Options, 'log'>;
  machine: Record<string, string | number>;
  git: string;
  s1?: S1Result;
  s2?: S2Result;
  s3?: S3Result;
  s4?: S4Result;
  s5?: S5Result;
  s6?: S6Result;
  wallSeconds?: number;
}

/**
 * The share of the last 10 s and 60 s in which some task waited for a CPU (Linux PSI): how much
 * the host's other work competed with the bench's processes.
 */
function cpuPressure(): string {
  try {
    const some = readFileSync('/proc/pressure/cpu', 'utf8').split('\n')[0] ?? '';
    const avg = (name: string) => /=([\d.]+)/.exec(some.slice(some.indexOf(name)))?.[1] ?? '?';
    return `${avg('avg10')} % (10 s), ${avg('avg60')} % (60 s)`;
  } catch {
    return 'unknown';
  }
}

function machine(): Record<string, string | number> {
  const sh = (cmd: string, args: string[]) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  };
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel: sh('uname', ['-r']),
    node: process.version,
    redis: sh('redis-server', ['--version']).split(' ')[2] ?? 'unknown',
    wrk: sh('sh', ['-c', 'wrk -v 2>&1 | head -1']),
    load: readFileSync('/proc/loadavg', 'utf8').trim(),
    cpuPressure: cpuPressure(),
  };
}

// Before any child starts: every one then inherits the load's CPUs, but those under test.
const pinned = values.pin ? pinProcesses(cpus().length) : null;

const started = performance.now();
const results: Results = {
  started: new Date().toISOString(),
  mode: smoke ? 'smoke' : 'full',
  options: (({ log: _log, ...rest }) => rest)(options),
  machine: {
    ...machine(),
    pinned: pinned ? `load on CPU ${pinned.load}, process under test on ${pinned.measured}` : 'no',
  },
  git: (() => {
    try {
      const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
        cwd: root,
        encoding: 'utf8',
      }).trim();
      const dirty = execFileSync('git', ['status', '--porcelain', 'server'], {
        cwd: root,
        encoding: 'utf8',
      }).trim();
      return dirty ? `${head} (server/ has uncommitted changes)` : head;
    } catch {
      return 'unknown';
    }
  })(),
};

const brokerNodeArgs = values['broker-args'].split(' ').filter(Boolean);
const stack = await BenchStack.start(3, {
  brokerNodeArgs,
  nodeArgs: [brokerNodeArgs, brokerNodeArgs, brokerNodeArgs],
});
let exitCode = 0;
try {
  options.log(
    `stack up: redis ${stack.redis.url}, sandbox ${stack.sandbox.url}, brokers ${stack.brokers.map((b) => b.url).join(' ')}`,
  );
  const needSessions = ['S1', 'S4', 'S5'].some((s) => only.has(s)) || only.has('S3');
  const sessions = needSessions ? await stack.createSessions(Number(values.sessions)) : [];
  if (needSessions) options.log(`${sessions.length} sessions sealed into Redis`);
  if (only.has('S1') || only.has('S3')) {
    await stack.startBare(sessions[0]!.accessToken, options.bareArgs);
    results.s1 = await s1(stack, sessions, options);
  }
  if (only.has('S2')) {
    const [storm] = await stack.createSessions(1);
    results.s2 = await s2(stack, storm!, options);
    if (results.s2.violations.length > 0) exitCode = 1;
  }
  if (only.has('S3')) results.s3 = await s3Callback(stack, options);
  if (only.has('S4')) results.s4 = await s4(stack, sessions[1]!, options.opens);
  if (only.has('S5')) results.s5 = await s5(stack, sessions, options);
  if (only.has('S6')) {
    // The smoke: 2,000 sessions, layout only. Last, since it empties Redis between its passes.
    results.s6 = await s6(stack, {
      sizes: smoke ? [2000] : numbers(values['s6-sizes']),
      perSession: numbers(values['s6-per-session']),
      realFlows: smoke ? 20 : Number(values['s6-real']),
      rounds: Number(values['s6-rounds']),
      seconds: Number(values['s6-seconds']),
      warmup: options.warmup,
      hot: 10,
      connections: options.connections,
      layoutOnly: smoke,
      // As in the Deployment's pod; --broker-args come after it, and win.
      brokerArgs: podHeapArgs(),
      log: options.log,
    });
    if (results.s6.violations.length > 0) exitCode = 1;
  }
} catch (error) {
  console.error(error);
  exitCode = 2;
} finally {
  await stack.close();
  if (!values['keep-logs']) rmSync(stack.logDir, { recursive: true, force: true });
  else options.log(`logs kept in ${stack.logDir}`);
}
results.wallSeconds = Math.round((performance.now() - started) / 100) / 10;
results.machine.cpuPressureAtEnd = cpuPressure();

const md = table(results);
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
writeFileSync(join(outDir, 'results.md'), md);
console.log(`\n${md}`);
console.log(`written to ${outDir} in ${results.wallSeconds}s`);
if (results.s2?.violations.length) {
  console.error(`S2 invariant violations:\n  ${results.s2.violations.join('\n  ')}`);
}
if (results.s6?.violations.length) {
  console.error(`S6 layout violations:\n  ${results.s6.violations.join('\n  ')}`);
}
process.exit(exitCode);

// ---------------------------------------------------------------- the table

function table(r: Results): string {
  const f = (n: number | undefined, digits = 2) =>
    n === undefined || Number.isNaN(n) ? 'n/a' : n.toFixed(digits);
  const sp = (s: { median: number; min: number; max: number } | undefined, digits = 2) =>
    s ? `${f(s.median, digits)} (${f(s.min, digits)}–${f(s.max, digits)})` : 'n/a';
  const mark = (ok: boolean | undefined, aim?: boolean) =>
    ok === undefined ? '' : ok ? (aim ? 'met (aim met)' : 'met') : 'NOT met';
  const rows: string[][] = [];
  const s1r = r.s1;
  // S1's targets are issue 17's (throughput, CPU per request, open-loop p99); the aims are the
  // first performance issue's, unchanged.
  if (s1r) {
    const t = s1r.ratioThroughput.median;
    rows.push([
      'S1 50 conns',
      'throughput B/b',
      sp(s1r.ratioThroughput),
      '>= 0.68',
      '>= 0.80',
      mark(t >= 0.68, t >= 0.8),
    ]);
    const c = s1r.ratioCpu.median;
    rows.push([
      'S1 50 conns',
      'CPU/req broker ÷ bare proxy',
      `${sp(s1r.ratioCpu)}x`,
      '<= 1.6x',
      '<= 1.3x',
      mark(c <= 1.6, c <= 1.3),
    ]);
    const a = s1r.addedP50Ms.median;
    rows.push([
      'S1 1 conn',
      'added p50 over direct, ms',
      sp(s1r.addedP50Ms, 3),
      '<= 0.25',
      '<= 0.15',
      mark(a <= 0.25, a <= 0.15),
    ]);
    const o = s1r.ratioOpenP99.median;
    rows.push([
      'S1 open loop 1000/s',
      'p99 B/b',
      `${sp(s1r.ratioOpenP99)}x`,
      '<= 1.5x',
      '<= 1.1x',
      mark(o <= 1.5, o <= 1.1),
    ]);
    const st = s1r.ratioStart.median;
    rows.push([
      'S3 /auth/start',
      'throughput ÷ b',
      sp(s1r.ratioStart),
      '>= 0.8',
      '>= 0.9',
      mark(st >= 0.8, st >= 0.9),
    ]);
  }
  if (r.s2) {
    for (const [delay, d] of Object.entries(r.s2.byDelay)) {
      const reps = r.s2.reps.filter((x) => String(x.delayMs) === delay);
      const inv = reps.every((x) => x.tokenCalls === 1 && x.invalidGrant === 0 && x.non2xx === 0);
      rows.push([
        `S2 storm ${r.s2.size}×${r.s2.instances} inst, delay ${delay} ms`,
        'token calls; invalid_grant; non-2xx (every rep)',
        `${reps.map((x) => x.tokenCalls).join(',')}; ${reps.map((x) => x.invalidGrant).join(',')}; ${reps.map((x) => x.non2xx).join(',')}`,
        'exactly 1; 0; 0',
        '',
        mark(inv),
      ]);
      const ex = d.excessMs.median;
      rows.push([
        `S2 delay ${delay} ms`,
        'storm − valid burst, ms',
        sp(d.excessMs, 1),
        `<= ${Number(delay) + 50}`,
        `<= ${Number(delay) + 20}`,
        mark(ex <= Number(delay) + 50, ex <= Number(delay) + 20),
      ]);
      const locks = Math.max(...d.lockAttempts);
      rows.push([
        `S2 delay ${delay} ms`,
        'Redis lock SETs per storm (MONITOR)',
        d.lockAttempts.join(','),
        `<= ${r.s2.instances}`,
        '',
        mark(locks <= r.s2.instances),
      ]);
    }
  }
  if (r.s3) {
    rows.push([
      'S3 /auth/callback',
      'p50 above token exchange, ms',
      `${f(r.s3.aboveP50Ms)} (cb ${f(r.s3.callbackMs.p50)} − direct ${f(r.s3.directExchangeMs.p50)})`,
      '<= 2',
      '<= 1',
      mark(r.s3.aboveP50Ms <= 2, r.s3.aboveP50Ms <= 1),
    ]);
    rows.push([
      'S3 /auth/callback',
      'p99 above token exchange, ms',
      `${f(r.s3.aboveP99Ms)} (cb ${f(r.s3.callbackMs.p99)} − direct ${f(r.s3.directExchangeMs.p99)})`,
      '<= 10',
      '',
      mark(r.s3.aboveP99Ms <= 10),
    ]);
  }
  if (r.s4) {
    const d = r.s4.diffMs.median;
    rows.push([
      `S4 cold page, ${r.s4.opens} opens`,
      'time to data, broker − direct, ms',
      `${sp(r.s4.diffMs)} (B ${f(r.s4.brokerMs.median)}, direct ${f(r.s4.directMs.median)})`,
      '<= +3',
      '<= +1',
      mark(d <= 3, d <= 1),
    ]);
  }
  if (r.s5) {
    rows.push([
      `S5 soak ${r.s5.seconds}s at ${r.s5.rate}/s`,
      'broker RSS growth after warm-up',
      `${f(r.s5.rssGrowthPct, 1)}% (${f(r.s5.rssAfterWarmupMb, 1)} → ${f(r.s5.rssEndMb, 1)} MB)`,
      '<= 5%',
      '',
      mark(r.s5.rssGrowthPct <= 5),
    ]);
    rows.push([
      'S5',
      "broker RSS growth over the soak's second half (a leak grows on there; a one-time step of the heap's sizing does not)",
      `${f(r.s5.rssSecondHalfPct, 1)}%`,
      '',
      '',
      '',
    ]);
    const [from, to] = [r.s5.heapAfterWarmupMb, r.s5.heapEndMb];
    if (from && to)
      rows.push([
        'S5',
        "broker heap over the same span, MB: young generation (V8 sizes it in steps); the rest, used (a leak's)",
        `${f(from.youngMb, 1)} → ${f(to.youngMb, 1)}; ${f(from.oldMb, 1)} → ${f(to.oldMb, 1)}`,
        '',
        '',
        '',
      ]);
    const cap = r.s5.capacity;
    rows.push([
      'S5',
      "rate: half of the broker's open-loop capacity (probes: req/s kept up, or fell behind)",
      cap
        ? `${r.s5.rate} of ${cap.rate} (${cap.probes.map((p) => `${p.rate}${p.keptUp ? '' : ' behind'}`).join(', ')})`
        : `${r.s5.rate}, set by --soak-rate`,
      '',
      '',
      '',
    ]);
    const eld = r.s5.eventLoopDelayMs;
    rows.push([
      'S5',
      'broker event-loop delay p99, ms (preload hook)',
      eld ? `${f(eld.p99)} (max ${f(eld.max)})` : 'n/a',
      '<= 5',
      '',
      eld ? mark(eld.p99 <= 5) : '',
    ]);
    const host = r.s5.reference.eventLoopDelayMs;
    rows.push([
      'S5',
      'bare proxy event-loop delay p99, ms, same soak (what the host alone does)',
      host ? `${f(host.p99)} (max ${f(host.max)})` : 'n/a',
      '',
      '',
      '',
    ]);
    const onCpu = (e: typeof eld) =>
      e?.onCpuP99 === undefined ? 'n/a' : `${f(e.onCpuP99)} (max ${f(e.onCpuMax ?? NaN)})`;
    rows.push([
      'S5',
      'of that delay, on a CPU (not queued for one), p99, ms: broker; bare proxy',
      `${onCpu(eld)}; ${onCpu(host)}`,
      '',
      '',
      '',
    ]);
    // A soak the server could not keep up with measured a backlog, not a loop at half load.
    const kept = (l: typeof r.s5.latency) => `${f(l.p50Ms)}; ${f(l.p99Ms)}`;
    rows.push([
      'S5',
      'answers p50; p99 over the whole soak, ms (a p50 far above 2 ms: the server fell behind, and the delay above measured its backlog): broker; bare proxy',
      `${kept(r.s5.latency)}; ${kept(r.s5.reference.latency)}`,
      '',
      '',
      '',
    ]);
    rows.push([
      'S5',
      "open-loop generator's own lag p99, ms (requests it fired late, together): broker's soak; bare proxy's",
      `${f(r.s5.latency.lagP99Ms)}; ${f(r.s5.reference.latency.lagP99Ms)}`,
      '',
      '',
      '',
    ]);
  }
  if (r.s6) rows.push(...s6Rows(r.s6));
  const header = ['scenario', 'figure', 'median (min–max over rounds)', 'target', 'aim', 'verdict'];
  const lines = [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`);
  const detail: string[] = [];
  if (s1r) {
    detail.push(
      '',
      '| S1 variant | req/s (50 conns) | CPU µs/req of that process | p50 1 conn, ms | open-loop p99, ms |',
      '|---|---|---|---|---|',
    );
    const name = {
      a: 'a: upstream direct',
      b: 'b: bare node:http + undici Pool',
      B: 'B: broker',
      start: 'B /auth/start',
    } as Record<string, string>;
    for (const v of ['a', 'b', 'B', 'start']) {
      detail.push(
        `| ${name[v]} | ${sp(s1r.throughput[v], 0)} | ${sp(s1r.cpuPerReqUs[v], 0)}${s1r.cpuPerReqUs[`${v} redis`] ? ` (+ redis ${sp(s1r.cpuPerReqUs[`${v} redis`], 0)})` : ''} | ${sp(s1r.oneConnP50Ms[v], 3)} | ${sp(s1r.openLoopP99Ms[v])} |`,
      );
    }
    detail.push(
      '',
      `Errors: ${JSON.stringify(s1r.errors)}; open-loop errors ${s1r.openLoopErrors}; bare proxy's added p50 over direct ${sp(s1r.addedP50BareMs, 3)} ms.`,
    );
  }
  if (r.s6) detail.push(...s6Table(r.s6));
  const m = r.machine;
  return [
    `# Baton bench (${r.mode}), ${r.started}`,
    '',
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memGb} GB, Linux ${m.kernel}, Node ${m.node}, Redis ${m.redis}, ${m.wrk}; load at start ${m.load}; CPU pressure (some task waiting for a core) at start ${m.cpuPressure}, at the end ${m.cpuPressureAtEnd}; pinned: ${m.pinned}. Commit ${r.git}.`,
    `Rounds ${r.options.rounds} × ${r.options.seconds}s after ${r.options.warmup}s warm-up; wall ${r.wallSeconds}s.`,
    '',
    ...lines,
    ...detail,
    '',
  ].join('\n');
}
