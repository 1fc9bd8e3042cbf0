/**
 * C4: every state change has exactly one event id, delivered at least once and in order per
 * connection, and no event reports a change that did not happen. The changes are what the history
 * shows: a POST /session answered 201 (created, or reconnected when the id was already the
 * session's), a DELETE answered 204 (removed, session ended), a grant's refusal at the provider
 * (disconnected), and a late holder storing its newer pair over the disconnection its
 * successor's reuse caused (the tap shows the grant rotating again, or its broker logs the store:
 * reconnected, a5afb79).
 */
import type { Delivery } from '../event-log.ts';
import type { History } from '../history.ts';
import type { Analysis, Violation } from './analysis.ts';

type State = 'none' | 'connected' | 'disconnected' | 'gone';

const MOVES: Record<string, Partial<Record<State, State>>> = {
  'connection.created': { none: 'connected' },
  'connection.reconnected': { connected: 'connected', disconnected: 'connected' },
  'connection.disconnected': { connected: 'disconnected' },
  'connection.removed': { connected: 'gone', disconnected: 'gone' },
};

interface Counts {
  created: number;
  reconnected: number;
  disconnected: number;
  removed: number;
}

/** `undone`: sessions whose sign-out a failover may have undone (sign-outs.ts): no session.ended due. */
export function checkEvents(
  analysis: Analysis,
  undone: ReadonlySet<string> = new Set(),
): Violation[] {
  const { history } = analysis;
  const violations: Violation[] = [];
  const broke = (what: string, detail: string, at?: number) =>
    violations.push({ invariant: 'C4', what, detail, ...(at === undefined ? {} : { at }) });

  // Each id: verified, one body, delivered first at `at`.
  const first = new Map<string, Delivery>();
  for (const delivery of history.deliveries) {
    if (!delivery.verified)
      broke(
        'a delivery that does not verify',
        `event ${delivery.id} (${delivery.type}) at ${delivery.at} ms`,
        delivery.at,
      );
    const earlier = first.get(delivery.id);
    if (!earlier) first.set(delivery.id, delivery);
    else if (earlier.bodyHash !== delivery.bodyHash)
      broke(
        'one event id, two bodies',
        `event ${delivery.id} came again with another body`,
        delivery.at,
      );
  }
  const events = [...first.values()].sort((a, b) => a.at - b.at);
  for (const outbox of history.redis?.undelivered ?? []) broke('events never delivered', outbox);

  const sessions = new Map(history.sessions.map((session) => [session.ref, session]));
  const unknownNewSessions = history.flows.filter(
    (flow) => flow.outcome === 'unknown' && !flow.joined,
  ).length;
  const strangers = new Set(
    events.filter((event) => !sessions.has(event.sessionRef)).map((event) => event.sessionRef),
  );
  if (strangers.size > unknownNewSessions)
    broke(
      'an event of a session nobody made',
      `${strangers.size} session refs no user had (${unknownNewSessions} sign-ins went unanswered)`,
    );

  // Replay each session's events in the order they came: one outbox per session, delivered in order.
  const states = new Map<string, State>();
  const counts = new Map<string, Counts>();
  const ended = new Map<string, number>();
  const finalBeforeEnd = new Map<string, State>();
  const countOf = (id: string): Counts => {
    let count = counts.get(id);
    if (!count)
      counts.set(id, (count = { created: 0, reconnected: 0, disconnected: 0, removed: 0 }));
    return count;
  };
  const sessionOf = new Map<string, string>();
  // A prefilled connection was there before the run, without an event of its own.
  for (const flow of history.flows)
    if (flow.outcome === 'prefilled' && flow.connection !== undefined) {
      states.set(flow.connection, 'connected');
      const ref = history.sessions.find((session) => session.label === flow.session)?.ref;
      if (ref !== undefined) sessionOf.set(flow.connection, ref);
    }
  for (const event of events) {
    const session = sessions.get(event.sessionRef);
    if (!session) continue;
    if (ended.has(event.sessionRef) && event.type !== 'session.ended') {
      broke(
        'an event after its session ended',
        `${event.type} of connection ${event.connection} in session ${session.label}`,
        event.at,
      );
      continue;
    }
    if (event.type === 'session.ended') {
      ended.set(event.sessionRef, (ended.get(event.sessionRef) ?? 0) + 1);
      for (const [id, owner] of sessionOf)
        if (owner === event.sessionRef) {
          finalBeforeEnd.set(id, states.get(id) ?? 'none');
          states.set(id, 'gone');
        }
      continue;
    }
    const id = event.connection ?? '';
    sessionOf.set(id, event.sessionRef);
    const state = states.get(id) ?? 'none';
    const next = MOVES[event.type]?.[state];
    if (next === undefined) {
      broke(
        'an event out of order or twice',
        `${event.type} of connection ${id} (session ${session.label}) while it was ${state}`,
        event.at,
      );
      continue;
    }
    states.set(id, next);
    const count = countOf(id);
    if (event.type === 'connection.created') count.created++;
    else if (event.type === 'connection.reconnected') count.reconnected++;
    else if (event.type === 'connection.disconnected') count.disconnected++;
    else if (event.type === 'connection.removed') count.removed++;
  }
  for (const [id, state] of states) if (!finalBeforeEnd.has(id)) finalBeforeEnd.set(id, state);

  const labelOf = new Map(
    [...sessionOf].map(([id, ref]) => [id, sessions.get(ref)?.label ?? ''] as const),
  );
  checkConnections(analysis, counts, labelOf, broke);
  checkSessions(history, ended, undone, broke);
  checkFinalStates(history, finalBeforeEnd, broke);
  return violations;
}

/** Each connection's events against the changes the history shows. */
function checkConnections(
  analysis: Analysis,
  counts: Map<string, Counts>,
  labelOf: Map<string, string>,
  broke: (what: string, detail: string, at?: number) => void,
): void {
  const { history } = analysis;
  const ids = new Set<string>([...counts.keys()]);
  for (const flow of history.flows) if (flow.connection !== undefined) ids.add(flow.connection);
  for (const id of ids) {
    const flows = history.flows.filter((flow) => flow.connection === id);
    const session = flows[0]?.session ?? labelOf.get(id);
    const unknown = history.flows.filter(
      (flow) => flow.outcome === 'unknown' && flow.session === session && session !== undefined,
    ).length;
    const count = counts.get(id) ?? { created: 0, reconnected: 0, disconnected: 0, removed: 0 };
    const made = flows.filter((flow) => flow.outcome === 'created').length;
    const again = flows.filter((flow) => flow.outcome === 'reconnected').length;
    const chains = analysis.chainsOf.get(id) ?? [];
    const resurrections = chains.reduce((sum, chain) => sum + chain.resurrections, 0);
    const refusals = chains.reduce(
      (sum, chain) =>
        sum +
        chain.requests.filter(
          (request) => request.outcome === 'rejected' || request.outcome === 'revoked',
        ).length,
      0,
    );
    const removals = history.removals.filter((removal) => removal.connection === id);
    const removed = removals.filter((removal) => removal.status === 204).length;
    const maybeRemoved = removals.filter(
      (removal) => removal.status === 0 || removal.status >= 500,
    ).length;
    const where = `connection ${id}${session ? ` (session ${session})` : ''}`;
    if (flows.length === 0) {
      if (unknown === 0)
        broke('an event of a connection nobody made', `${where}: ${JSON.stringify(count)}`);
      continue;
    }
    if (made > count.created)
      broke('a change without its event', `${where}: created, and no connection.created came`);
    if (count.created > made + unknown)
      broke(
        'an event reporting no change',
        `${where}: connection.created, and no sign-in created it`,
      );
    if (again > count.reconnected)
      broke(
        'a change without its event',
        `${where}: authorized again ${again} times, ${count.reconnected} connection.reconnected came`,
      );
    if (count.reconnected > again + resurrections + unknown)
      broke(
        'an event reporting no change',
        `${where}: ${count.reconnected} connection.reconnected for ${again} authorizations and ${resurrections} late holders' pairs`,
      );
    if (count.disconnected > refusals)
      broke(
        'an event reporting no change',
        `${where}: ${count.disconnected} connection.disconnected for ${refusals} refusals at the provider`,
      );
    if (removed > count.removed)
      broke(
        'a change without its event',
        `${where}: removed (204), and no connection.removed came`,
      );
    if (count.removed > removed + maybeRemoved)
      broke('an event reporting no change', `${where}: connection.removed, and nobody removed it`);
  }
}

/** One session.ended per session signed out, none for a session still there. */
function checkSessions(
  history: History,
  ended: Map<string, number>,
  undone: ReadonlySet<string>,
  broke: (what: string, detail: string, at?: number) => void,
): void {
  for (const session of history.sessions) {
    const signOuts = history.signOuts.filter((signOut) => signOut.session === session.label);
    const done = signOuts.some((signOut) => signOut.status === 204);
    const maybe = signOuts.some((signOut) => signOut.status === 0 || signOut.status >= 500);
    const count = ended.get(session.ref) ?? 0;
    if (count > 1)
      broke('an event out of order or twice', `session ${session.label}: ${count} session.ended`);
    if (done && count === 0 && !undone.has(session.label))
      broke(
        'a change without its event',
        `session ${session.label}: signed out (204), and no session.ended came`,
      );
    if (!done && !maybe && count > 0)
      broke(
        'an event reporting no change',
        `session ${session.label}: session.ended, and it never signed out`,
      );
  }
}

/**
 * What the events say each connection was when its session ended, against what the instances
 * answered for it at the end (the final probes' last users.me): connected, or disconnected.
 */
function checkFinalStates(
  history: History,
  finalBeforeEnd: Map<string, State>,
  broke: (what: string, detail: string, at?: number) => void,
): void {
  const last = new Map<string, { status: number; error?: string }>();
  for (const probe of history.connectionProbes) last.set(probe.connection, probe);
  for (const [id, probe] of last) {
    const expected =
      probe.status === 200
        ? 'connected'
        : probe.error === 'reauthorization_required'
          ? 'disconnected'
          : undefined;
    if (expected === undefined) continue;
    const state = finalBeforeEnd.get(id) ?? 'none';
    if (state !== expected)
      broke(
        'the events disagree with the state',
        `connection ${id}: the events leave it ${state}, the brokers answered it ${expected}`,
      );
  }
}
