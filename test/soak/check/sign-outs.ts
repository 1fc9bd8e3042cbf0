/**
 * Sign-outs a failover may have undone. A sign-out's deletion is a write like any other: answered
 * once the master has it, and lost if the master fails over before a replica has it (the broker
 * logs a write no replica acknowledged; docs/operations.md, Redis durability). The session then
 * lives on to its TTL on the new master, with its connections, and its session.ended is lost with
 * it. Named when the broker that answered 204 logged an unacknowledged write while deleting, with
 * a fault of Redis under way then or in the seconds after.
 */
import { WINDOWS, type Analysis, type Explained } from './analysis.ts';
import { UNREPLICATED } from './rotation.ts';

/** How long after a sign-out a failover may still find its deletion on the master only. */
const FAILOVER_AFTER_MS = 10_000;

/** The sign-outs a failover may have undone, by session label, each named and traced. */
export function undoneSignOuts(analysis: Analysis): Map<string, Explained> {
  const { history } = analysis;
  const undone = new Map<string, Explained>();
  if (history.topology === 'standalone') return undone;
  const unreplicated = analysis.linesMatching(UNREPLICATED);
  const ended = new Set(
    history.deliveries
      .filter((delivery) => delivery.type === 'session.ended')
      .map((delivery) => delivery.sessionRef),
  );
  const refOf = new Map(history.sessions.map((session) => [session.label, session.ref]));
  for (const signOut of history.signOuts) {
    // Only where something was lost: most such deletions reach the replica in the end.
    if (signOut.status !== 204 || ended.has(refOf.get(signOut.session) ?? '')) continue;
    const lines = unreplicated.filter(
      (entry) =>
        entry.line.startsWith(`broker ${signOut.instance} `) &&
        entry.at !== undefined &&
        entry.at >= signOut.start &&
        entry.at <= signOut.end + 1000,
    );
    const faults = history.faults.filter(
      (fault) =>
        fault.kind.startsWith('redis-') &&
        fault.start <= signOut.end + FAILOVER_AFTER_MS &&
        (fault.healed ?? Infinity) >= signOut.start,
    );
    if (lines.length === 0 || faults.length === 0) continue;
    undone.set(signOut.session, {
      invariant: 'C4',
      window: WINDOWS.failover,
      detail: `session ${signOut.session}: signed out (204) through instance ${signOut.instance}, and no session.ended came; its keys stayed`,
      at: signOut.end,
      trace: [
        ...faults.map((fault) => `nemesis: fault ${fault.seq} ${fault.kind} on ${fault.target}`),
        ...lines.slice(0, 3).map((entry) => entry.line),
      ],
    });
  }
  return undone;
}
