/**
 * `node test/bench/threads.ts [--seconds 6] [--rounds 2]`: CPU per request of the broker and of the
 * bare proxy under S1's load (wrk, 50 connections, 1,000 sessions), split by thread as Linux names
 * them (/proc/<pid>/task/<tid>/stat): the JavaScript thread, V8's workers (parallel scavenges,
 * concurrent marking), libuv's pool (file writes: the access log) and the rest. A CPU profile sees
 * only the first. Also the write system calls per request (/proc/<pid>/io `syscw`): two for a
 * proxied call (the upstream request, the answer), more when the process logs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { wrk } from './loadgen.ts';
import { viaBroker, writeLines } from './scenarios.ts';
import { BenchStack } from './stack.ts';
import { statCpu, type Proc } from './procs.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '2' },
  },
});

/** utime + stime in ms of each thread of `pid`, by thread name. */
function threads(pid: number): Map<string, number> {
  const ms = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const thread = statCpu(`/proc/${pid}/task/${tid}/stat`);
    const kind = tid === String(pid) ? 'main' : thread.name;
    ms.set(kind, (ms.get(kind) ?? 0) + thread.ms);
  }
  return ms;
}

/** Write system calls made so far by `pid`, all threads. */
const writes = (pid: number): number =>
  Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);

/** Per request: write system calls, and CPU µs by thread kind. */
interface Measured {
  writes: number;
  perCall: Map<string, number>;
}

const stack = await BenchStack.start(1, { eventLoopHook: false });
try {
  const sessions = await stack.createSessions(1000);
  await stack.startBare(sessions[0]!.accessToken);
  const lines = writeLines(stack.logDir, 'threads.txt', viaBroker(sessions));
  const measure = async (proc: Proc): Promise<Measured> => {
    const load = (seconds: number) =>
      wrk({ origin: proc.url, linesFile: lines, connections: 50, threads: 2, seconds });
    await load(3);
    const before = threads(proc.pid);
    const writesBefore = writes(proc.pid);
    const { requests } = await load(Number(values.seconds));
    const after = threads(proc.pid);
    const perCall = new Map<string, number>();
    for (const [kind, ms] of after) {
      perCall.set(kind, ((ms - (before.get(kind) ?? 0)) * 1000) / requests);
    }
    return { writes: (writes(proc.pid) - writesBefore) / requests, perCall };
  };
  const rows: ({ name: string } & Measured)[] = [];
  for (let round = 1; round <= Number(values.rounds); round++) {
    rows.push({ name: `broker (round ${round})`, ...(await measure(stack.brokers[0]!)) });
    rows.push({ name: `bare proxy (round ${round})`, ...(await measure(stack.bare!)) });
  }
  const kinds = [...new Set(rows.flatMap((row) => [...row.perCall.keys()]))];
  console.log(`| process | writes/req | CPU µs/req | ${kinds.join(' | ')} |`);
  console.log(`|---|---|---|${kinds.map(() => '---').join('|')}|`);
  for (const { name, writes, perCall } of rows) {
    const total = kinds.reduce((sum, kind) => sum + (perCall.get(kind) ?? 0), 0);
    const cells = kinds.map((kind) => (perCall.get(kind) ?? 0).toFixed(1));
    console.log(`| ${name} | ${writes.toFixed(2)} | ${total.toFixed(0)} | ${cells.join(' | ')} |`);
  }
} finally {
  await stack.close();
}
