/**
 * C1, no refresh token presented twice, and C2, nothing lost: both read the provider's side of
 * every grant (the tap's token requests), and share the question of why a used token came back.
 */
import type { TokenRequest } from '../history.ts';
import { WINDOWS, type Analysis, type Explained, type Violation } from './analysis.ts';

/** Time after a rotation's answer within which a kill of its broker counts as a kill holding it. */
const KILL_SLACK_MS = 2000;

/** How long after an answer its broker's "lost" line may come (a busy machine's event loop). */
const GAVE_UP_SLACK_MS = 3000;
const LOST = /"failure":"lost"/;

/**
 * How long after a write standalone Redis may still not have written it to its AOF: with
 * `appendfsync everysec` it postpones that write, up to 2 s, while a background fsync is slow.
 */
const AOF_POSTPONED_MS = 2000;

const STORED_LATE = /a rotated pair is lost|the store answered again; stored the rotated pair/;

export const UNREPLICATED = /not acknowledged by enough Redis replicas|the store had lost writes/;

/**
 * Why `second`, a presentation of a refresh token the provider had already rotated at `first`,
 * happened: a documented window (its name and the lines that show it), or undefined.
 */
export function whyReused(
  analysis: Analysis,
  first: TokenRequest,
  second: TokenRequest,
): { window: string; trace: string[] } | undefined {
  const { history } = analysis;
  const connection =
    first.chain === undefined ? undefined : analysis.connectionOf.get(first.chain)?.connection;
  const named =
    connection === undefined
      ? []
      : analysis.linesAbout(connection, first.start - 5000, second.start + 10_000).slice(0, 8);
  if (first.outcome === 'dropped') {
    // Armed when the sandbox dropped it, whenever it was sent (the nemesis notes a fault's start
    // once armed: a request already on its way may be the one it drops).
    const planned = analysis.activeFaults(first.answered ?? first.start, 'provider-lost-answer');
    if (planned.length > 0)
      return {
        window: WINDOWS.plannedLostAnswer,
        trace: [
          `nemesis: fault ${planned[0]!.seq} ${planned[0]!.kind} (${planned[0]!.note ?? ''})`,
          ...named,
        ],
      };
  }
  const answered = first.end ?? first.answered ?? first.start;
  // Its presenter, or (when the tap could not name it: it was gone already) a broker killed then;
  // a request its sender wrote just before it was killed may reach the tap just after.
  const killed = history.lives.find(
    (life) =>
      (life.pid === first.pid || first.pid === undefined) &&
      life.how === 'SIGKILL' &&
      life.ended !== undefined &&
      life.ended >= first.start - KILL_SLACK_MS &&
      life.ended <= answered + KILL_SLACK_MS,
  );
  if (killed)
    return {
      window: WINDOWS.killedHolder,
      trace: [
        `nemesis: broker ${killed.instance} (pid ${killed.pid}) SIGKILL at ${killed.ended} ms; its refresh ${first.seq} was answered at ${answered} ms`,
        ...named,
      ],
    };
  const paused = history.pauses.find(
    (pause) =>
      pause.pid === first.pid &&
      pause.from <= second.start &&
      (pause.to ?? Infinity) >= first.start,
  );
  if (paused)
    return {
      window: WINDOWS.pausedHolder,
      trace: [
        `nemesis: broker ${paused.instance} (pid ${paused.pid}) SIGSTOP from ${paused.from} to ${paused.to} ms; its refresh ${first.seq} started at ${first.start} ms`,
        ...named,
      ],
    };
  // The answer reached its socket after the broker had given up at its token timeout (the tap's
  // write still succeeded): the broker says so, a lost answer, at once.
  const gaveUp =
    first.outcome === 'rotated' && connection !== undefined && first.answered !== undefined
      ? analysis
          .linesAbout(connection, first.start, first.answered + GAVE_UP_SLACK_MS)
          .find((line) => line.includes(`(pid ${first.pid},`) && LOST.test(line))
      : undefined;
  if (
    (first.outcome === 'rotated' && first.delivered === false) ||
    first.outcome === 'abandoned' ||
    gaveUp
  )
    return {
      window: WINDOWS.undelivered,
      trace: [
        first.outcome === 'abandoned'
          ? `tap: token request ${first.seq} cut at ${Math.round(first.start)} ms when its broker went away, after the provider had rotated`
          : gaveUp
            ? `tap: token request ${first.seq} sent at ${Math.round(first.start)} ms, rotated at ${Math.round(first.answered ?? 0)} ms, after its broker had given up: ${gaveUp}`
            : `tap: token request ${first.seq} rotated at ${Math.round(first.answered ?? 0)} ms, not delivered`,
        ...named,
      ],
    };
  const redisFaults = history.faults.filter(
    (fault) =>
      fault.kind.startsWith('redis-') &&
      fault.start <= second.start &&
      (fault.healed ?? Infinity) >= first.start,
  );
  const unreplicated = analysis
    .linesMatching(UNREPLICATED)
    .filter(
      (entry) =>
        entry.at === undefined ||
        (entry.at >= first.start - 2000 && entry.at <= second.start + 2000),
    );
  if (redisFaults.length > 0 && unreplicated.length > 0)
    return {
      window: WINDOWS.failover,
      trace: [
        ...redisFaults.map(
          (fault) => `nemesis: fault ${fault.seq} ${fault.kind} on ${fault.target}`,
        ),
        ...unreplicated.slice(0, 3).map((entry) => entry.line),
        ...named,
      ],
    };
  const aofKill =
    history.topology === 'standalone'
      ? history.faults.find(
          (fault) =>
            fault.kind === 'redis-kill-master' &&
            fault.start >= answered &&
            fault.start <= Math.min(answered + AOF_POSTPONED_MS, second.start),
        )
      : undefined;
  if (aofKill)
    return {
      window: WINDOWS.aofEverysec,
      trace: [
        `nemesis: fault ${aofKill.seq} redis-kill-master at ${Math.round(aofKill.start)} ms, ${Math.round(aofKill.start - answered)} ms after refresh ${first.seq}'s pair was answered and stored`,
        ...named,
      ],
    };
  // The holder's pair reached the store only after its lease (or never): a successor that read
  // the record before it presented the token the holder had used.
  const storeDown =
    connection === undefined
      ? []
      : analysis
          .linesAbout(connection, first.start, second.start + 1000)
          .filter((line) => line.includes(`(pid ${first.pid},`) && STORED_LATE.test(line));
  if (storeDown.length > 0) return { window: WINDOWS.storeDown, trace: [...storeDown, ...named] };
  return undefined;
}

/** C1: each refresh token presented once, but where a documented window explains a second. */
export function checkRotation(analysis: Analysis): {
  violations: Violation[];
  explained: Explained[];
} {
  const violations: Violation[] = [];
  const explained: Explained[] = [];
  const byToken = new Map<string, TokenRequest[]>();
  for (const request of analysis.history.tokens) {
    if (request.grant !== 'refresh_token') continue;
    const list = byToken.get(request.presented) ?? [];
    list.push(request);
    byToken.set(request.presented, list);
  }
  for (const presentations of byToken.values()) {
    for (const [index, second] of presentations.entries()) {
      const first = presentations.slice(0, index).find((earlier) => rotatedBefore(earlier, second));
      if (!first) continue;
      const where = describe(analysis, second);
      if (second.outcome === 'rotated') {
        violations.push({
          invariant: 'C1',
          what: 'the provider accepted a used refresh token',
          detail: `${where}: token request ${second.seq} rotated a token request ${first.seq} had used`,
          at: second.start,
        });
        continue;
      }
      const why = whyReused(analysis, first, second);
      if (why)
        explained.push({
          invariant: 'C1',
          window: why.window,
          detail: `${where}: token request ${second.seq} presented the refresh token request ${first.seq} had used (${second.outcome})`,
          at: second.start,
          trace: why.trace,
        });
      else
        violations.push({
          invariant: 'C1',
          what: 'a refresh token presented twice',
          detail: `${where}: token request ${second.seq} (pid ${second.pid}, at ${second.start} ms) presented the refresh token that request ${first.seq} (pid ${first.pid}, at ${first.start} ms, ${first.outcome}, delivered ${first.delivered}) had already used`,
          at: second.start,
          trace: connectionTrace(analysis, second),
        });
    }
  }
  return { violations, explained };
}

/**
 * C2, nothing lost: no grant ends by a used token's refusal outside a documented window, no
 * session or connection disappears, and at the end every connection whose grant stands is
 * connected and answers on every instance, every session valid on every instance.
 */
export function checkLoss(analysis: Analysis): { violations: Violation[]; explained: Explained[] } {
  const violations: Violation[] = [];
  const explained: Explained[] = [];
  const { history } = analysis;
  const lost = new Set<string>();

  for (const chain of analysis.chains.values()) {
    const dead = chain.deadBy;
    if (!dead || (chain.revokedAt !== undefined && chain.revokedAt <= dead.start)) continue;
    const where = describe(analysis, dead);
    const first = history.tokens.find(
      (request) =>
        request.presented === dead.presented &&
        request.start < dead.start &&
        rotatedBefore(request, dead),
    );
    const why = first && whyReused(analysis, first, dead);
    if (why) {
      explained.push({
        invariant: 'C2',
        window: why.window,
        detail: `${where}: its grant ended at token request ${dead.seq}`,
        at: dead.start,
        trace: why.trace,
      });
      lost.add(chain.code);
    } else
      violations.push({
        invariant: 'C2',
        what: 'a grant lost',
        detail: `${where}: its grant ended at token request ${dead.seq} (${dead.description ?? dead.outcome}) outside any documented window`,
        at: dead.start,
        trace: connectionTrace(analysis, dead),
      });
  }

  for (const session of history.sessions) {
    // A sign-out that failed midway may have ended the session: that one was asked for.
    if (session.lost === undefined || (session.signOutSent ?? Infinity) <= session.lost) continue;
    violations.push({
      invariant: 'C2',
      what: 'a session lost',
      detail: `session ${session.label} (user ${session.user}) stopped being valid at ${session.lost} ms without a sign-out`,
      at: session.lost,
    });
  }

  for (const call of history.calls) {
    if (call.error !== 'not_found' || call.afterSignOut !== undefined) continue;
    const removed = history.removals.some(
      (removal) => removal.connection === call.connection && removal.start <= call.start,
    );
    if (!removed)
      violations.push({
        invariant: 'C2',
        what: 'a connection vanished',
        detail: `connection ${call.connection} (session ${call.session}) answered not_found at ${call.start} ms through instance ${call.instance}, never removed`,
        at: call.start,
        trace: analysis.linesAbout(call.connection).slice(-6),
      });
  }

  // A connection answered as needing authorization: its grant was refused or revoked by then.
  for (const call of history.calls) {
    if (call.error !== 'reauthorization_required') continue;
    const refused = analysis
      .inForce(call.connection, call.start)
      .some(
        (chain) =>
          (chain.revokedAt !== undefined && chain.revokedAt <= call.end) ||
          chain.requests.some(
            (request) =>
              (request.outcome === 'rejected' || request.outcome === 'revoked') &&
              request.start <= call.end,
          ),
      );
    if (!refused)
      violations.push({
        invariant: 'C2',
        what: 'disconnected while its grant stood',
        detail: `connection ${call.connection} (session ${call.session}) answered reauthorization_required at ${Math.round(call.start)} ms through instance ${call.instance}, and the provider had refused nothing of its grant`,
        at: call.start,
        trace: analysis.linesAbout(call.connection).slice(-8),
      });
  }

  const seen = new Set<string>();
  for (const probe of history.connectionProbes) {
    if (seen.has(`${probe.connection}:${probe.instance}`)) continue;
    seen.add(`${probe.connection}:${probe.instance}`);
    // Connected at the end is owed only when every grant it may hold stands.
    const inForce = analysis.inForce(probe.connection, Infinity);
    if (inForce.length === 0) continue;
    const stands = (chain: (typeof inForce)[number]) =>
      chain.revokedAt === undefined && chain.deadBy === undefined && !lost.has(chain.code);
    if (!inForce.every(stands)) continue;
    const good =
      probe.listed === 'connected' && probe.status === 200 && probe.gotLicense === probe.license;
    if (!good)
      violations.push({
        invariant: 'C2',
        what: 'a connection not connected at the end',
        detail: `connection ${probe.connection} (session ${probe.session}, ${probe.license}) on instance ${probe.instance}: listed ${probe.listed}${probe.reason ? ` (${probe.reason})` : ''}, users.me ${probe.status}${probe.error ? ` ${probe.error}` : ''}`,
        trace: analysis.linesAbout(probe.connection).slice(-8),
      });
  }
  for (const probe of history.sessionProbes)
    if (probe.status !== 200)
      violations.push({
        invariant: 'C2',
        what: 'a session not valid at the end',
        detail: `session ${probe.session} on instance ${probe.instance}: GET /connections ${probe.status}${probe.error ? ` ${probe.error}` : ''}`,
      });
  return { violations, explained };
}

const USED = /already used/i;

/**
 * Whether `earlier`, a presentation of the token `later` presents again, rotated it at the
 * provider: it was answered with a pair, or dropped after rotating; or the tap cut it when its
 * broker went away (`abandoned`), and the provider then refuses the token as used: it had
 * rotated before the cut.
 */
function rotatedBefore(earlier: TokenRequest, later: TokenRequest): boolean {
  if (earlier.outcome === 'rotated' || earlier.outcome === 'dropped') return true;
  return (
    earlier.outcome === 'abandoned' &&
    later.outcome === 'rejected' &&
    USED.test(later.description ?? '')
  );
}

/** Which connection and session a token request was for, as the report says it. */
function describe(analysis: Analysis, request: TokenRequest): string {
  const owner = request.chain === undefined ? undefined : analysis.connectionOf.get(request.chain);
  return owner
    ? `connection ${owner.connection} (session ${owner.session})`
    : (analysis.chains.get(request.chain ?? '')?.label ?? 'a grant the tap never saw start');
}

function connectionTrace(analysis: Analysis, request: TokenRequest): string[] {
  const owner = request.chain === undefined ? undefined : analysis.connectionOf.get(request.chain);
  return owner
    ? analysis
        .linesAbout(owner.connection, request.start - 15_000, request.start + 10_000)
        .slice(-10)
    : [];
}
