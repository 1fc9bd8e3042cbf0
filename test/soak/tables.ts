/**
 * `node test/soak/tables.ts <summary.json>…`: docs/reliability.md's two tables (the runs' figures,
 * and the recovery after each heal by fault kind) from the summaries `pnpm soak` writes, one
 * column per run, in Markdown. What a run was made on (its revision) is for the reader to add.
 */
import { readFile } from 'node:fs/promises';
import type { Summary } from './summary.ts';

const num = (value: number): string => value.toLocaleString('en-US');

/** The answers the table always lists, in this order; others follow as they come. */
const ANSWERS = [
  ['0', 'answered nothing (an instance down)'],
  ['200', 'answered 200'],
  ['401 (license API)', 'answered 401 (license API)'],
  ['401 invalid_session', 'answered 401 invalid_session'],
  ['401 reauthorization_required', 'answered 401 reauthorization_required'],
  ['404 not_found', 'answered 404 not_found'],
  ['503 (license API)', 'answered 503 (license API)'],
  ['503 upstream_unavailable', 'answered 503 upstream_unavailable'],
] as const;

function row(name: string, cells: readonly string[]): string {
  return `| ${name} | ${cells.join(' | ')} |`;
}

export function figures(runs: readonly Summary[]): string {
  const lines = [
    row(
      '',
      runs.map((run) => run.topology),
    ),
    `|---|${runs.map(() => '---:').join('|')}|`,
    row(
      'run',
      runs.map((run) => `seed ${run.seed}, ${run.minutes} min, ${run.users} users`),
    ),
    row(
      'calls',
      runs.map((run) => num(run.calls.total)),
    ),
    row(
      'answered 2xx',
      runs.map((run) => `${(run.calls.shareOk * 100).toFixed(1)} %`),
    ),
  ];
  const listed = new Set<string>(ANSWERS.map(([key]) => key));
  const others = [...new Set(runs.flatMap((run) => Object.keys(run.calls.byAnswer)))]
    .filter((key) => !listed.has(key))
    .map((key) => [key, `answered ${key}`] as const);
  for (const [key, name] of [...ANSWERS, ...others])
    lines.push(
      row(
        `&nbsp;&nbsp;${name}`,
        runs.map((run) => num(run.calls.byAnswer[key] ?? 0)),
      ),
    );
  lines.push(
    row(
      'authorizations (created / reconnected / failed)',
      runs.map((run) =>
        ['created', 'reconnected', 'failed'].map((key) => num(run.flows[key] ?? 0)).join(' / '),
      ),
    ),
    row(
      'refresh rotations',
      runs.map((run) => num(run.provider.rotations)),
    ),
    row(
      'faults (kinds)',
      runs.map((run) => `${run.faults.total} (${run.faults.kinds})`),
    ),
    row(
      'events delivered (ids)',
      runs.map((run) => `${num(run.events.delivered)} (${num(run.events.ids)})`),
    ),
  );
  for (const invariant of Object.keys(runs[0]?.violations ?? {}))
    lines.push(
      row(
        `violations ${invariant}`,
        runs.map((run) => num(run.violations[invariant] ?? 0)),
      ),
    );
  const windows = [
    ...new Set(runs.flatMap((run) => Object.keys(run.explained).filter((w) => w.startsWith('C2')))),
  ].sort();
  for (const window of windows)
    lines.push(
      row(
        `connections lost in a named window: ${window.slice(3).split(' (')[0]}`,
        runs.map((run) => num(run.explained[window] ?? 0)),
      ),
    );
  const time = ({ p50Ms, p90Ms }: { p50Ms: number; p90Ms: number }) =>
    `${num(p50Ms)} / ${num(p90Ms)} ms`;
  lines.push(
    row(
      '2xx call time p50 / p90, no fault active',
      runs.map((run) => (run.latency ? time(run.latency.calm) : '–')),
    ),
    row(
      '2xx call time p50 / p90, a killed Redis node rejoining (AOF load, resync)',
      runs.map((run) => (run.latency ? time(run.latency.rejoining) : '–')),
    ),
    row(
      'Redis after everyone signed out vs baseline',
      runs.map((run) =>
        run.redis ? `${num(run.redis.baselineBytes)} → ${num(run.redis.finalBytes)} B` : '–',
      ),
    ),
  );
  return lines.join('\n');
}

export function recoveries(runs: readonly Summary[]): string {
  const kinds = [...new Set(runs.flatMap((run) => run.recovery.map((entry) => entry.kind)))].sort();
  const lines = [
    row(
      'fault kind',
      runs.map((run) => `${run.topology}: n, worst / p99 ms, others failed`),
    ),
    `|---|${runs.map(() => '---').join('|')}|`,
  ];
  for (const kind of kinds)
    lines.push(
      row(
        kind,
        runs.map((run) => {
          const entry = run.recovery.find((each) => each.kind === kind);
          if (!entry) return '–';
          const parts = [`${entry.faults}, ${num(entry.worstMs)} / ${num(entry.p99Ms)}`];
          if (entry.othersFailed !== undefined) parts.push(num(entry.othersFailed));
          if (entry.worstOutageOverFailoverMs !== undefined)
            parts.push(`outage − (failover + 3 s): ${num(entry.worstOutageOverFailoverMs)} ms`);
          return parts.join(', ');
        }),
      ),
    );
  return lines.join('\n');
}

if (import.meta.main) {
  const runs = await Promise.all(
    process.argv.slice(2).map(async (file) => JSON.parse(await readFile(file, 'utf8')) as Summary),
  );
  console.log(`${figures(runs)}\n\n${recoveries(runs)}`);
}
