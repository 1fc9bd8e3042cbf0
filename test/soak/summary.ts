import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { INVARIANTS, type Verdict } from './checker.ts';
import type { CallRecord, History } from './history.ts';

/** What a run reports: the summary table's figures, as JSON for docs/reliability.md. */
export interface Summary {
  topology: string;
  seed: string;
  minutes: number;
  users: number;
  /** The run stopped early, and why. */
  aborted?: string;
  calls: { total: number; ok: number; shareOk: number; byAnswer: Record<string, number> };
  flows: Record<string, number>;
  faults: { total: number; kinds: number; byKind: Record<string, number> };
  provider: {
    codeExchanges: number;
    rotations: number;
    refusals: number;
    byOutcome: Record<string, number>;
  };
  events: { delivered: number; ids: number; byType: Record<string, number> };
  violations: Record<string, number>;
  /** Losses in documented windows, by window: counted and named, not violations. */
  explained: Record<string, number>;
  recovery: Verdict['recoveryByKind'];
  /** Non-2xx answers that came while no fault was active (nor healing, nor 10 s after). */
  calm: Record<string, number>;
  /**
   * How long 2xx calls took (p50 / p90 ms) with no fault active, and while a Redis node the
   * nemesis killed was rejoining (from its restart to its heal: loading its AOF, and on Sentinel
   * and Cluster a full resync from its master). On one machine that resync competes with
   * everything else for the same cores.
   */
  latency: { calm: Quantiles; rejoining: Quantiles };
  soakLoop?: History['soakLoop'];
  redis?: History['redis'];
  /** The first violations and explained losses, with their traces. */
  details: { violations: Verdict['violations']; explained: Verdict['explained'] };
}

export interface Quantiles {
  n: number;
  p50Ms: number;
  p90Ms: number;
}

/** Kinds whose heal restarts a Redis node that then loads and resyncs its data. */
const RESTARTS_REDIS = new Set(['redis-kill-master', 'redis-replica-down']);

function quantiles(durations: number[]): Quantiles {
  const sorted = durations.sort((a, b) => a - b);
  const at = (p: number) => Math.round(sorted[Math.floor((sorted.length - 1) * p)] ?? 0);
  return { n: sorted.length, p50Ms: at(0.5), p90Ms: at(0.9) };
}

/** 2xx call times, calm and while a Redis node rejoins (see `Summary.latency`). */
function latency(history: History): Summary['latency'] {
  const ok = history.calls.filter((call) => call.status >= 200 && call.status < 300);
  const during = (call: CallRecord, from: number, to: number) =>
    call.start <= to && call.end >= from;
  const calm = ok.filter(
    (call) =>
      !history.faults.some((fault) =>
        during(call, fault.start, (fault.healed ?? Infinity) + 10_000),
      ),
  );
  const rejoining = ok.filter((call) =>
    history.faults.some(
      (fault) =>
        RESTARTS_REDIS.has(fault.kind) &&
        fault.healStart !== undefined &&
        call.start >= fault.healStart &&
        call.start <= (fault.healed ?? Infinity),
    ),
  );
  const took = (calls: CallRecord[]) => calls.map((call) => call.end - call.start);
  return { calm: quantiles(took(calm)), rejoining: quantiles(took(rejoining)) };
}

const count = <T>(items: readonly T[], key: (item: T) => string): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
};

export function summarise(
  history: History,
  verdict: Verdict,
  run: { minutes: number; users: number },
): Summary {
  const calls = history.calls;
  const ok = calls.filter((call) => call.status >= 200 && call.status < 300).length;
  const ids = new Set(history.deliveries.map((delivery) => delivery.id));
  return {
    topology: history.topology,
    seed: history.seed,
    minutes: run.minutes,
    users: run.users,
    ...(history.aborted ? { aborted: history.aborted } : {}),
    calls: {
      total: calls.length,
      ok,
      shareOk: calls.length === 0 ? 0 : ok / calls.length,
      byAnswer: count(
        calls,
        (call) =>
          `${call.status}${call.error ? ` ${call.error}` : call.status >= 300 ? ' (license API)' : ''}`,
      ),
    },
    flows: count(history.flows, (flow) => flow.outcome),
    faults: {
      total: history.faults.length,
      kinds: new Set(history.faults.map((fault) => fault.kind)).size,
      byKind: count(history.faults, (fault) => fault.kind),
    },
    provider: {
      codeExchanges: history.tokens.filter(
        (t) => t.grant === 'auth_code' && t.outcome === 'rotated',
      ).length,
      rotations: history.tokens.filter(
        (t) => t.grant === 'refresh_token' && t.outcome === 'rotated',
      ).length,
      refusals: history.tokens.filter((t) => t.outcome === 'rejected' || t.outcome === 'revoked')
        .length,
      byOutcome: count(history.tokens, (t) => `${t.grant} ${t.outcome}`),
    },
    events: {
      delivered: history.deliveries.length,
      ids: ids.size,
      byType: count([...new Map(history.deliveries.map((d) => [d.id, d])).values()], (d) => d.type),
    },
    violations: Object.fromEntries(
      INVARIANTS.map((invariant) => [invariant, verdict.byInvariant[invariant]]),
    ),
    explained: count(verdict.explained, (entry) => `${entry.invariant} ${entry.window}`),
    recovery: verdict.recoveryByKind,
    calm: count(
      calls.filter(
        (call) =>
          (call.status < 200 || call.status >= 300) &&
          call.afterSignOut === undefined &&
          !history.faults.some(
            (fault) => fault.start <= call.end && (fault.healed ?? Infinity) + 10_000 >= call.start,
          ),
      ),
      (call) => `${call.status}${call.error ? ` ${call.error}` : ''}`,
    ),
    latency: latency(history),
    ...(history.soakLoop ? { soakLoop: history.soakLoop } : {}),
    ...(history.redis ? { redis: history.redis } : {}),
    details: {
      violations: verdict.violations.slice(0, 200),
      explained: verdict.explained.slice(0, 100),
    },
  };
}

const pad = (text: string, width: number) => text.padEnd(width);
const num = (value: number) => (Number.isFinite(value) ? value.toLocaleString('en-US') : '∞');

/** The summary table, as printed. */
export function table(summary: Summary): string {
  const lines: string[] = [];
  const row = (name: string, value: string) => lines.push(`  ${pad(name, 44)} ${value}`);
  lines.push(
    `Soak ${summary.topology}, seed ${summary.seed}, ${summary.minutes} min, ${summary.users} users`,
  );
  if (summary.aborted) lines.push(`  THE RUN STOPPED EARLY: ${summary.aborted}`);
  row('calls', `${num(summary.calls.total)} (${(summary.calls.shareOk * 100).toFixed(2)} % 2xx)`);
  for (const [answer, n] of Object.entries(summary.calls.byAnswer))
    row(`  answered ${answer}`, num(n));
  row(
    'authorizations',
    Object.entries(summary.flows)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  );
  row('faults', `${summary.faults.total} of ${summary.faults.kinds} kinds`);
  for (const [kind, n] of Object.entries(summary.faults.byKind)) row(`  ${kind}`, num(n));
  row(
    'code exchanges / refresh rotations',
    `${num(summary.provider.codeExchanges)} / ${num(summary.provider.rotations)}`,
  );
  row('refusals at the provider', num(summary.provider.refusals));
  row('events delivered (ids)', `${num(summary.events.delivered)} (${num(summary.events.ids)})`);
  lines.push('  violations');
  for (const [invariant, n] of Object.entries(summary.violations)) row(`  ${invariant}`, num(n));
  if (Object.keys(summary.explained).length > 0) {
    lines.push('  losses in documented windows (counted, not violations)');
    for (const [window, n] of Object.entries(summary.explained))
      row(`  ${window.slice(0, 80)}`, num(n));
  }
  if (summary.recovery.length > 0) {
    lines.push(
      `  recovery after heal (worst / p99 ms)${' '.repeat(8)}others failed  outage-(failover+3s)`,
    );
    for (const entry of summary.recovery)
      row(
        `  ${entry.kind} ×${entry.faults}`,
        `${pad(`${num(entry.worstMs)} / ${num(entry.p99Ms)}`, 16)} ${pad(entry.othersFailed === undefined ? '' : num(entry.othersFailed), 14)} ${entry.worstOutageOverFailoverMs === undefined ? '' : num(entry.worstOutageOverFailoverMs)}`,
      );
  }
  if (Object.keys(summary.calm).length > 0)
    row(
      'non-2xx with no fault active',
      Object.entries(summary.calm)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', '),
    );
  const { calm, rejoining } = summary.latency;
  row(
    '2xx call time p50 / p90: calm; Redis rejoining',
    `${num(calm.p50Ms)} / ${num(calm.p90Ms)} ms (${num(calm.n)}); ${num(rejoining.p50Ms)} / ${num(rejoining.p90Ms)} ms (${num(rejoining.n)})`,
  );
  if (summary.soakLoop)
    row(
      "the soak process's loop delay (p99 / max)",
      `${summary.soakLoop.p99Ms} / ${summary.soakLoop.maxMs} ms`,
    );
  if (summary.redis)
    row(
      'Redis dataset baseline → after sign-out',
      `${num(summary.redis.baselineBytes)} → ${num(summary.redis.finalBytes)} bytes (${num(summary.redis.expiringBytes)} short-lived)`,
    );
  if (summary.redis?.ttlSample)
    row(
      'TTLs looked at (a prefilled store)',
      `the users' keys and those of no session; other sessions 1 in ${summary.redis.ttlSample}`,
    );
  for (const violation of summary.details.violations.slice(0, 20))
    lines.push(`  ✗ ${violation.invariant} ${violation.what}: ${violation.detail}`);
  return lines.join('\n');
}

/** Writes the summary as JSON under test/soak/results/ (git-ignored); answers the file. */
export async function writeSummary(summary: Summary): Promise<string> {
  const dir = fileURLToPath(new URL('./results/', import.meta.url));
  await mkdir(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const file = `${dir}${summary.topology}-seed${summary.seed}-${summary.minutes}min-${stamp}.json`;
  await writeFile(file, `${JSON.stringify(summary, null, 2)}\n`);
  return file;
}
