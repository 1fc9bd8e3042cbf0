/**
 * C5: after each heal, calls succeed again within a bound. A call failed when it got no answer
 * from an instance that was up, or a 5xx; a fault's recovery is how long after its heal began
 * such failures went on (a failure while another fault was active at any time between the call's
 * start and its end, or once the next one began, is that one's: a call in flight when a broker
 * was paused under it answers when it wakes). Also, for the
 * faults of one broker, the calls through the other instances that failed meanwhile, and for a
 * failover, how long calls failed from the fault on (the failures no other fault had a hand in),
 * against the failover's own time plus 3 s.
 */
import type { CallRecord, FaultRecord } from '../history.ts';
import { percentile, type Analysis, type Violation } from './analysis.ts';

/** How far after a heal failures are looked for (and the worst a recovery can measure). */
const LOOK_MS = 60_000;

export interface Recovery {
  seq: number;
  kind: string;
  /** ms from the heal's start to the end of the last failed call it is to blame for. */
  recoveryMs: number;
  /** Broker faults: failed calls through the other instances while it lasted. */
  othersFailed?: number;
  /** Failovers: ms from the fault to the end of its last failed call, and the failover's own time. */
  outageMs?: number;
  failoverMs?: number;
}

export interface RecoveryByKind {
  kind: string;
  faults: number;
  worstMs: number;
  p99Ms: number;
  /** Broker faults: failed calls through the other instances, in all. */
  othersFailed?: number;
  /** Failovers: the worst outage against failover time + 3 s. */
  worstOutageOverFailoverMs?: number;
}

export function failed(analysis: Analysis, call: CallRecord): boolean {
  if (call.afterSignOut !== undefined) return false;
  if (call.status === 0) return !analysis.unavailable(call.instance, call.start - 1000, call.end);
  return call.status >= 500;
}

export function checkRecovery(
  analysis: Analysis,
  boundMs: number,
): { violations: Violation[]; recoveries: Recovery[]; byKind: RecoveryByKind[] } {
  const { history } = analysis;
  const violations: Violation[] = [];
  const recoveries: Recovery[] = [];
  const calls = [...history.calls].sort((a, b) => a.start - b.start);
  /** Whether a fault other than `fault` was active at any time while `call` was in flight. */
  const others = (fault: FaultRecord, call: CallRecord) =>
    history.faults.some(
      (other) =>
        other.seq !== fault.seq &&
        other.start <= call.end &&
        (other.healed ?? Infinity) >= call.start,
    );

  for (const fault of history.faults) {
    if (fault.healStart === undefined) continue;
    const from = fault.healStart;
    // Failures once the next fault has begun are that one's to answer for.
    const next = Math.min(
      ...history.faults.filter((other) => other.start > from).map((other) => other.start),
    );
    const until = Math.min(from + LOOK_MS, history.phases.usersTo, next);
    let last = from;
    for (const call of calls) {
      if (call.start < from) continue;
      if (call.start > until) break;
      if (failed(analysis, call) && !others(fault, call)) last = Math.max(last, call.end);
    }
    const recovery: Recovery = {
      seq: fault.seq,
      kind: fault.kind,
      recoveryMs: Math.round(last - from),
    };
    if (fault.instance !== undefined && fault.kind.startsWith('broker-')) {
      recovery.othersFailed = calls.filter(
        (call) =>
          call.instance !== fault.instance &&
          call.start >= fault.start &&
          call.start <= (fault.healed ?? from) &&
          failed(analysis, call) &&
          !others(fault, call),
      ).length;
    }
    if (fault.failoverMs !== undefined) {
      let outage = fault.start;
      for (const call of calls) {
        if (call.start < fault.start) continue;
        if (call.start > from) break;
        if (failed(analysis, call) && !others(fault, call)) outage = Math.max(outage, call.end);
      }
      recovery.outageMs = Math.round(outage - fault.start);
      recovery.failoverMs = Math.round(fault.failoverMs);
    }
    recoveries.push(recovery);
    if (recovery.recoveryMs > boundMs)
      violations.push({
        invariant: 'C5',
        what: 'calls did not recover in time',
        detail: `fault ${fault.seq} ${fault.kind} on ${fault.target}: calls failed until ${recovery.recoveryMs} ms after its heal (bound ${boundMs} ms)`,
        at: from,
      });
  }

  const kinds = [...new Set(recoveries.map((recovery) => recovery.kind))].sort();
  const byKind = kinds.map((kind): RecoveryByKind => {
    const mine = recoveries.filter((recovery) => recovery.kind === kind);
    const times = mine.map((recovery) => recovery.recoveryMs);
    const entry: RecoveryByKind = {
      kind,
      faults: mine.length,
      worstMs: Math.max(...times),
      p99Ms: percentile(times, 99),
    };
    const othersFailed = mine.filter((recovery) => recovery.othersFailed !== undefined);
    if (othersFailed.length > 0)
      entry.othersFailed = othersFailed.reduce((sum, recovery) => sum + recovery.othersFailed!, 0);
    const failovers = mine.filter((recovery) => recovery.outageMs !== undefined);
    if (failovers.length > 0)
      entry.worstOutageOverFailoverMs = Math.max(
        ...failovers.map((recovery) => recovery.outageMs! - (recovery.failoverMs! + 3000)),
      );
    return entry;
  });
  return { violations, recoveries, byKind };
}
