/**
 * C5: after each heal, calls succeed again within a bound. A call failed when it got no answer
 * from an instance that was up, or a 5xx. A broker's fault touches the calls through that broker;
 * any other fault, every call. A fault's recovery is how long after its heal began the calls it
 * touches went on failing, leaving out a failure while another fault that touches the call was
 * active at any time between the call's start and its end, or once the next such fault began
 * (that one's: a call in flight when a broker was paused under it answers when it wakes).
 *
 * Also, for the faults of one broker, the calls through the other instances that failed from the
 * fault on until its heal or one refresh lease later (a lock it held lives that long), with no
 * other fault that touches them active nor still recovering (a Redis restart's reconnects, the
 * provider's back-off); and for a failover, how long calls failed from the fault on (the failures
 * no other fault had a hand in), against the failover's own time plus 3 s.
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
  /** Broker faults: failed calls through the other instances (see above). */
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
  const touches = (fault: FaultRecord, call: CallRecord) =>
    fault.instance === undefined || fault.instance === call.instance;
  /**
   * Whether a fault other than `fault` was active at any time while `call` was in flight, and
   * until `tailMs(other)` after its heal.
   */
  const others = (fault: FaultRecord, call: CallRecord, tailMs = (_: FaultRecord) => 0) =>
    history.faults.some(
      (other) =>
        other.seq !== fault.seq &&
        touches(other, call) &&
        other.start <= call.end &&
        (other.healed ?? Infinity) + tailMs(other) >= call.start,
    );

  /** ms after `fault`'s heal began that the calls it touches went on failing. */
  const recoveryOf = (fault: FaultRecord, tailMs: (other: FaultRecord) => number): number => {
    const from = fault.healStart!;
    // Failures once the next fault that could touch them has begun are that one's to answer for.
    const later = history.faults.filter((other) => other.start > from);
    const nextFor = new Map<number, number>();
    const next = (call: CallRecord) => {
      if (!nextFor.has(call.instance))
        nextFor.set(
          call.instance,
          Math.min(...later.filter((other) => touches(other, call)).map((other) => other.start)),
        );
      return nextFor.get(call.instance)!;
    };
    const until = Math.min(from + LOOK_MS, history.phases.usersTo);
    let last = from;
    for (const call of calls) {
      if (call.start < from) continue;
      if (call.start > until) break;
      if (!touches(fault, call) || call.start > next(call)) continue;
      if (failed(analysis, call) && !others(fault, call, tailMs)) last = Math.max(last, call.end);
    }
    return Math.round(last - from);
  };

  // Redis's and the provider's faults first; then the brokers', which leave out what those were
  // still recovering from (a broker restarted while the provider's back-off runs out, say).
  const healed = history.faults.filter((fault) => fault.healStart !== undefined);
  const isBroker = (fault: FaultRecord) => fault.kind.startsWith('broker-');
  const recovered = new Map<number, number>();
  const tailMs = (other: FaultRecord) => (isBroker(other) ? 0 : (recovered.get(other.seq) ?? 0));
  for (const fault of healed.filter((fault) => !isBroker(fault)))
    recovered.set(
      fault.seq,
      recoveryOf(fault, () => 0),
    );
  for (const fault of healed.filter(isBroker)) recovered.set(fault.seq, recoveryOf(fault, tailMs));

  for (const fault of healed) {
    const recovery: Recovery = {
      seq: fault.seq,
      kind: fault.kind,
      recoveryMs: recovered.get(fault.seq)!,
    };
    if (fault.instance !== undefined && isBroker(fault))
      recovery.othersFailed = calls.filter(
        (call) =>
          call.instance !== fault.instance &&
          call.start >= fault.start &&
          call.start <= Math.max(fault.healed ?? fault.healStart!, fault.start + history.leaseMs) &&
          failed(analysis, call) &&
          !others(fault, call, tailMs),
      ).length;
    if (fault.failoverMs !== undefined) {
      let outage = fault.start;
      for (const call of calls) {
        if (call.start < fault.start) continue;
        if (call.start > fault.healStart!) break;
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
        at: fault.healStart!,
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
