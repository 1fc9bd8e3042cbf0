/**
 * The checker: a history in, the invariants' verdict out. Pure (no clock, no I/O), so that its
 * unit tests (checker.test.ts) feed it histories made by hand.
 *
 * - C1: no refresh token presented twice, but after a lost answer (where the reuse must fail);
 * - C2: nothing lost: every grant not revoked lives on, every session and connection is there at
 *   the end and answers on every instance, but for losses in documented windows (counted, named,
 *   traced to their log lines);
 * - C3: every answer is a documented one, with the caller's own data;
 * - C4: every change has one event, delivered at least once, in order; no event without a change;
 * - C5: after each heal, calls succeed again within a bound;
 * - C6: nothing unbounded in Redis.
 */
import { analyse, type Explained, type Invariant, type Violation } from './check/analysis.ts';
import { checkAnswers } from './check/answers.ts';
import { checkBounds } from './check/bounds.ts';
import { checkEvents } from './check/events.ts';
import { checkRecovery, type Recovery, type RecoveryByKind } from './check/recovery.ts';
import { checkLoss, checkRotation } from './check/rotation.ts';
import { undoneSignOuts } from './check/sign-outs.ts';
import type { History } from './history.ts';

export type { Explained, Invariant, Violation } from './check/analysis.ts';
export const INVARIANTS: readonly Invariant[] = ['C1', 'C2', 'C3', 'C4', 'C5', 'C6'];

export interface CheckOptions {
  /** C5's bound: calls succeed again this long after a heal at the latest. */
  recoveryBoundMs: number;
}

export interface Verdict {
  violations: Violation[];
  explained: Explained[];
  byInvariant: Record<Invariant, number>;
  recoveries: Recovery[];
  recoveryByKind: RecoveryByKind[];
}

export function check(history: History, options: CheckOptions): Verdict {
  const analysis = analyse(history);
  const rotation = checkRotation(analysis);
  const loss = checkLoss(analysis);
  const recovery = checkRecovery(analysis, options.recoveryBoundMs);
  const undone = undoneSignOuts(analysis);
  const undoneSessions = new Set(undone.keys());
  const violations = [
    ...(history.aborted
      ? [{ invariant: 'C5' as const, what: 'the run stopped early', detail: history.aborted }]
      : []),
    ...(history.failedStarts ?? []).map((start) => ({
      invariant: 'C5' as const,
      what: 'a broker did not start',
      detail: `instance ${start.instance} at ${Math.round(start.at)} ms exited while starting: ${start.reason}`,
    })),
    ...rotation.violations,
    ...loss.violations,
    ...checkAnswers(analysis),
    ...checkEvents(analysis, undoneSessions),
    ...recovery.violations,
    ...checkBounds(history.redis, undoneSessions),
  ];
  const byInvariant = Object.fromEntries(
    INVARIANTS.map((invariant) => [
      invariant,
      violations.filter((violation) => violation.invariant === invariant).length,
    ]),
  ) as Record<Invariant, number>;
  return {
    violations,
    explained: [...rotation.explained, ...loss.explained, ...undone.values()],
    byInvariant,
    recoveries: recovery.recoveries,
    recoveryByKind: recovery.byKind,
  };
}
