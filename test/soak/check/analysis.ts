/**
 * What the invariants share, derived once from a history: each grant's chain of token requests
 * and what it became, each connection's grants, the fault windows, when each instance could not
 * answer, and the brokers' log lines that name a connection.
 */
import type { FaultRecord, FlowRecord, History, License, TokenRequest } from '../history.ts';

export type Invariant = 'C1' | 'C2' | 'C3' | 'C4' | 'C5' | 'C6';

export interface Violation {
  invariant: Invariant;
  /** A short name of what broke, the same for every case of it (the report groups by it). */
  what: string;
  /** The case: which connection, call, key... */
  detail: string;
  at?: number;
  /** Log lines (brokers', the nemesis's) that show it. */
  trace?: string[];
}

/** A loss the invariants allow because the docs name its window: counted, named, traced. */
export interface Explained {
  invariant: Invariant;
  window: string;
  detail: string;
  at?: number;
  trace?: string[];
}

/**
 * Documented windows in which a rotated pair may be lost (docs/operations.md, the spec's lost
 * answer), by the name the report gives them.
 */
export const WINDOWS = {
  plannedLostAnswer:
    "a planned lost answer (the provider rotated, then dropped the answer: the spec's reuse then fails)",
  undelivered:
    'the answer never reached its broker (it went away, or gave up at its token timeout)',
  killedHolder:
    "a broker killed between the provider's answer and its write (the pair was in no one else's hands)",
  pausedHolder:
    'a broker paused past its lease while holding the answer (its successor presented the same token)',
  failover:
    'a failover lost a write no replica had acknowledged (docs/operations.md, Redis durability)',
  storeDown:
    'the store stayed down past the lease (refresh/rotated.ts): its pair was stored late, or lost',
  aofEverysec:
    'Redis killed with an acknowledged write not yet in its AOF (appendfsync everysec: docs/operations.md, Redis durability)',
} as const;

export interface Chain {
  /** The authorization code it started with (never printed: `label` names it). */
  code: string;
  label: string;
  flow: FlowRecord | undefined;
  license: License | undefined;
  /** Every token request presenting its code or one of its refresh tokens, in order sent. */
  requests: TokenRequest[];
  /** When the provider revoked it (the tap's revocation, or every grant of its license). */
  revokedAt: number | undefined;
  /** The request whose refusal ended it ("already used"), if one did and nothing rotated after. */
  deadBy: TokenRequest | undefined;
  /**
   * A late holder stored its newer pair after a refusal of a used token (a5afb79): the grant
   * rotated after it, or its broker logged the store.
   */
  resurrections: number;
  /** Its sign-in was answered (201); false: its POST /session had no answer, it may not be stored. */
  answered: boolean;
}

export interface Analysis {
  history: History;
  chains: Map<string, Chain>;
  /** Each connection id's grants (chains), in the order they were authorized. */
  chainsOf: Map<string, Chain[]>;
  /** The connection a chain belongs to. */
  connectionOf: Map<string, { session: string; connection: string }>;
  /**
   * The grants connection `id` may hold at `at`: from the last one whose sign-in was answered on
   * (a sign-in without an answer may or may not have replaced it).
   */
  inForce(id: string, at: number): Chain[];
  /** Whether instance `index` could not answer at some point in [from, to]. */
  unavailable(index: number, from: number, to: number): boolean;
  /** The faults of `kind` (or any) active at `at` (from injection to the end of the heal). */
  activeFaults(at: number, kind?: string): FaultRecord[];
  /** The brokers' log lines that name `text`, each with its instance. */
  linesNaming(text: string): string[];
  /**
   * What the brokers logged about a connection (`"connection":"<id>"`: refreshes, disconnections,
   * late holders...), or, when they logged nothing of it, every line naming it (access lines); in
   * time order, within [from, to] when given.
   */
  linesAbout(connection: string, from?: number, to?: number): string[];
  /** Lines matching `pattern`, with the time each was logged (ms on the soak's clock, approximate). */
  linesMatching(pattern: RegExp): { at: number | undefined; line: string }[];
}

const USED = /already used/i;
const LATE_STORE = /stored the newest pair over that disconnection/;

export function analyse(history: History): Analysis {
  const chains = new Map<string, Chain>();
  const flowsByCode = new Map<string, FlowRecord>();
  for (const flow of history.flows) if (flow.code !== undefined) flowsByCode.set(flow.code, flow);
  const chainOf = (code: string): Chain => {
    let chain = chains.get(code);
    if (!chain) {
      const flow = flowsByCode.get(code);
      chain = {
        code,
        label: `grant ${chains.size + 1}`,
        flow,
        license: flow?.license,
        requests: [],
        revokedAt: undefined,
        deadBy: undefined,
        resurrections: 0,
        answered: flow?.outcome !== 'unknown',
      };
      chains.set(code, chain);
    }
    return chain;
  };
  for (const request of history.tokens)
    if (request.chain !== undefined) chainOf(request.chain).requests.push(request);
  for (const flow of history.flows) if (flow.code !== undefined) chainOf(flow.code);

  for (const chain of chains.values()) {
    // From its authorization on: a license's revocation between the code's issue and its exchange
    // deletes the code too (the sandbox forgets it: "unknown or already used").
    const started = Math.min(chain.flow?.start ?? Infinity, chain.requests[0]?.start ?? Infinity);
    const revocations = history.revocations.filter(
      (revocation) =>
        (revocation.chain === chain.code ||
          (revocation.license !== undefined && revocation.license === chain.license)) &&
        (revocation.chain !== undefined || revocation.at >= started),
    );
    chain.revokedAt = revocations[0]?.at;
    // A refusal of a used token ends the chain, unless something rotated after it.
    let dead: TokenRequest | undefined;
    for (const request of chain.requests) {
      if (request.outcome === 'rejected' && USED.test(request.description ?? '')) dead ??= request;
      else if (request.outcome === 'rotated' && dead && request.start > dead.start) {
        chain.resurrections++;
        dead = undefined;
      }
    }
    chain.deadBy = dead;
  }

  const chainsOf = new Map<string, Chain[]>();
  const connectionOf = new Map<string, { session: string; connection: string }>();
  const attach = (code: string, session: string, connection: string) => {
    const list = chainsOf.get(connection) ?? [];
    list.push(chainOf(code));
    chainsOf.set(connection, list);
    connectionOf.set(code, { session, connection });
  };
  const stored = (flow: FlowRecord) =>
    flow.outcome === 'created' || flow.outcome === 'reconnected' || flow.outcome === 'prefilled';
  for (const flow of history.flows) {
    if (flow.connection === undefined || flow.code === undefined || !stored(flow)) continue;
    attach(flow.code, flow.session, flow.connection);
  }
  // A sign-in whose POST /session had no answer (or a 5xx) may have stored its grant anyway: in
  // the connection its session already held for that license, which the broker reconnects in place.
  for (const flow of history.flows) {
    if (flow.outcome !== 'unknown' || flow.code === undefined || !flow.joined) continue;
    const held = history.flows.filter(
      (earlier) =>
        stored(earlier) &&
        earlier.session === flow.session &&
        earlier.license === flow.license &&
        earlier.connection !== undefined &&
        earlier.start < flow.start,
    );
    const last = held.at(-1);
    if (last) attach(flow.code, flow.session, last.connection!);
  }
  for (const list of chainsOf.values())
    list.sort((a, b) => (a.flow?.start ?? 0) - (b.flow?.start ?? 0));

  const down: { instance: number; from: number; to: number }[] = [];
  for (const instance of new Set(history.lives.map((life) => life.instance))) {
    const lives = history.lives
      .filter((life) => life.instance === instance)
      .sort((a, b) => a.started - b.started);
    for (const [index, life] of lives.entries()) {
      if (life.ended === undefined) continue;
      // From when its stop signal went (a SIGTERM's drain first closes the listener).
      const from = life.stopping ?? life.ended;
      down.push({ instance, from, to: lives[index + 1]?.started ?? Infinity });
    }
  }
  for (const pause of history.pauses)
    down.push({ instance: pause.instance, from: pause.from, to: pause.to ?? Infinity });

  const epoch = history.epoch;
  const lines = history.logs.map((entry) => ({
    ...entry,
    at: lineTime(entry.line, epoch),
  }));

  // A late holder that stores its pair over the disconnection says so (rotated.ts): the grant
  // lives on even when nothing rotated after (its user authorized again first, say).
  const lateStores = lines.filter((entry) => LATE_STORE.test(entry.line));
  for (const chain of chains.values()) {
    const dead = chain.deadBy;
    const owner = connectionOf.get(chain.code);
    if (dead === undefined || owner === undefined) continue;
    const about = `"connection":"${owner.connection}"`;
    if (lateStores.some((entry) => entry.line.includes(about) && (entry.at ?? 0) >= dead.start)) {
      chain.resurrections++;
      chain.deadBy = undefined;
    }
  }

  return {
    history,
    chains,
    chainsOf,
    connectionOf,
    inForce(id, at) {
      const before = (chainsOf.get(id) ?? []).filter((chain) => (chain.flow?.start ?? 0) <= at);
      const known = before.findLastIndex((chain) => chain.answered);
      return before.slice(Math.max(0, known));
    },
    unavailable: (index, from, to) =>
      down.some((span) => span.instance === index && span.from <= to && span.to >= from),
    activeFaults: (at, kind) =>
      history.faults.filter(
        (fault) =>
          (kind === undefined || fault.kind === kind) &&
          fault.start <= at &&
          (fault.healed ?? Infinity) >= at,
      ),
    linesNaming: (text) =>
      lines
        .filter((entry) => entry.line.includes(text))
        .map((entry) => `broker ${entry.instance} (pid ${entry.pid}): ${entry.line}`),
    linesAbout(connection, from = -Infinity, to = Infinity) {
      const within = lines
        .filter((entry) => entry.line.includes(connection))
        .filter((entry) => entry.at === undefined || (entry.at >= from && entry.at <= to))
        .sort((a, b) => (a.at ?? 0) - (b.at ?? 0));
      const about = within.filter((entry) => entry.line.includes(`"connection":"${connection}"`));
      return (about.length > 0 ? about : within).map(
        (entry) =>
          `broker ${entry.instance} (pid ${entry.pid}, ${Math.round(entry.at ?? 0)} ms): ${entry.line}`,
      );
    },
    linesMatching: (pattern) =>
      lines
        .filter((entry) => pattern.test(entry.line))
        .map((entry) => ({
          at: entry.at,
          line: `broker ${entry.instance} (pid ${entry.pid}): ${entry.line}`,
        })),
  };
}

/** A pino line's `time`, on the soak's clock (the broker's own clock may have been jumped). */
function lineTime(line: string, epoch: number): number | undefined {
  const time = /"time":(\d+)/.exec(line)?.[1];
  return time === undefined ? undefined : Number(time) - epoch;
}

/** The p-th percentile (nearest rank) of `values`. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ]!;
}
