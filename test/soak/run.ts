/**
 * `pnpm soak`: a seeded soak of three broker processes under combined faults, checked against
 * the invariants C1-C6 (checker.ts), on one Redis topology.
 *
 *   pnpm soak --topology standalone|sentinel|cluster --minutes 30 --seed 7
 *   pnpm soak --topology cluster --minutes 30 --prefill 1000000
 *   pnpm soak --minutes 2 --kinds broker-kill,redis-latency      (only these faults)
 *   pnpm soak --minutes 2 --no-faults                            (the users alone)
 *
 * Prints the summary table and writes it as JSON under test/soak/results/ (git-ignored); exits 1
 * when an invariant was violated. The same seed gives the same users' intentions and the same
 * schedule of faults (what the system does with them still depends on timing).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { check } from './checker.ts';
import type { History } from './history.ts';
import { prefillSessions } from './prefill.ts';
import { runSoak } from './soak.ts';
import { summarise, table, writeSummary } from './summary.ts';
import { TOPOLOGIES, type TopologyName } from './soak-redis.ts';

const { values } = parseArgs({
  options: {
    topology: { type: 'string', default: 'standalone' },
    minutes: { type: 'string', default: '30' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    users: { type: 'string' },
    'gap-s': { type: 'string', default: '9' },
    kinds: { type: 'string' },
    'no-faults': { type: 'boolean', default: false },
    prefill: { type: 'string' },
    'lifetime-s': { type: 'string', default: '6' },
    'recovery-bound-s': { type: 'string', default: '30' },
    'license-revocation-min': { type: 'string', default: '5' },
    /** Also write the whole history beside the summary (large; for looking into a run). */
    'save-history': { type: 'boolean', default: false },
    /** Judge a saved history again with this checker (and write its summary again), run nothing. */
    recheck: { type: 'string' },
  },
});

const topology = values.topology as TopologyName;
if (!TOPOLOGIES.includes(topology))
  throw new Error(`--topology must be one of ${TOPOLOGIES.join(', ')}`);
const minutes = Number(values.minutes);
const users = Number(values.users ?? (minutes >= 10 ? 24 : 10));
const prefill = Number(values.prefill ?? (topology === 'cluster' && minutes >= 10 ? 1_000_000 : 0));

// Ctrl-C ends the users' phase now: the faults are healed, the run checked, and every process it
// started is stopped (a second Ctrl-C leaves at once, and may leave some running).
const stopping = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.log(`\n${signal}: ending the run now; healing, checking, then stopping everything`);
    stopping.abort();
    process.once(signal, () => process.exit(130));
  });

const history: History = values.recheck
  ? (JSON.parse(await readFile(values.recheck, 'utf8')) as History)
  : await runSoak({
      topology,
      seed: values.seed,
      durationMs: minutes * 60_000,
      users,
      lifetimeS: Number(values['lifetime-s']),
      meanGapMs: values['no-faults'] ? 0 : Number(values['gap-s']) * 1000,
      ...(values.kinds ? { kinds: values.kinds.split(',') } : {}),
      licenseRevocationEveryMs: Number(values['license-revocation-min']) * 60_000,
      ...(prefill > 0
        ? {
            prefill: (system, log) =>
              prefillSessions(system, { sessions: prefill, adopt: users, log }),
          }
        : {}),
      log: (line) => console.log(line),
      signal: stopping.signal,
    });
const verdict = check(history, { recoveryBoundMs: Number(values['recovery-bound-s']) * 1000 });
const summary = summarise(history, verdict, {
  minutes: values.recheck
    ? Math.round((history.phases.usersTo - history.phases.usersFrom) / 60_000)
    : minutes,
  users: values.recheck ? new Set(history.sessions.map((session) => session.user)).size - 1 : users,
});
console.log(`\n${table(summary)}`);
for (const explained of verdict.explained.slice(0, 10))
  console.log(
    `  ~ ${explained.invariant} ${explained.window}: ${explained.detail}\n      ${(explained.trace ?? []).slice(0, 4).join('\n      ')}`,
  );
const file = await writeSummary(summary);
console.log(`\nwritten to ${file}`);
if (values['save-history'] && !values.recheck) {
  await writeFile(file.replace(/\.json$/, '.history.json'), JSON.stringify(history));
  console.log(`history written to ${file.replace(/\.json$/, '.history.json')}`);
}
process.exitCode = verdict.violations.length > 0 ? 1 : 0;
