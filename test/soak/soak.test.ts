/**
 * The soak's CI form: seeded, two minutes each on standalone and on Sentinel, three broker
 * processes under the nemesis's combined faults, checked against the invariants (no timings: C5's
 * recovery times are reported, not asserted, on a shared 2-core machine). `pnpm soak` is the long
 * form (run.ts).
 */
import { describe, expect, it } from 'vitest';
import { check } from './checker.ts';
import { runSoak } from './soak.ts';
import { summarise, table, writeSummary } from './summary.ts';
import type { TopologyName } from './soak-redis.ts';

const MINUTES = 2;
const USERS = 8;

describe.each<[TopologyName, string]>([
  ['standalone', '39'],
  ['sentinel', '39'],
])('a %s soak of two minutes (seed %s)', (topology, seed) => {
  it('holds C1 to C4 and C6 under combined faults', async () => {
    const history = await runSoak({
      topology,
      seed,
      durationMs: MINUTES * 60_000,
      users: USERS,
      lifetimeS: 6,
      meanGapMs: 8000,
      licenseRevocationEveryMs: 60_000,
      log: () => {},
    });
    // A generous bound: C5 is reported here, not judged.
    const verdict = check(history, { recoveryBoundMs: Infinity });
    const summary = summarise(history, verdict, { minutes: MINUTES, users: USERS });
    console.log(`${table(summary)}\n(written to ${await writeSummary(summary)})`);
    const failed = verdict.violations.map(
      (violation) => `${violation.invariant} ${violation.what}: ${violation.detail}`,
    );
    expect(failed).toEqual([]);
    // It did what it says: faults of several kinds, rotations, events.
    expect(summary.faults.kinds).toBeGreaterThanOrEqual(8);
    expect(summary.provider.rotations).toBeGreaterThan(50);
    expect(summary.events.ids).toBeGreaterThan(20);
  });
});
