/**
 * C3: every answer is one the docs allow, and holds the data of the caller's own connection: no
 * call answers with another session's or license's data, no 500, every other non-2xx a
 * documented answer (a transient one with Retry-After, the reauthorization answer, the session's
 * end, the license API's 401 for a grant revoked during the call), and once a sign-out is acknowledged the old token gets 401 invalid_session everywhere.
 */
import { ERROR_STATUS } from '@baton/shared';
import type { CallRecord } from '../history.ts';
import type { Analysis, Violation } from './analysis.ts';

/**
 * How long after a sign-out's acknowledgment another instance may still answer from its cached
 * copy: docs/operations.md gives about 2 s (a second of the heartbeat, a command's bound) for a
 * revocation that cannot reach its master; plus a second on a busy machine.
 */
export const SIGN_OUT_GRACE_MS = 3000;

/** The OAuth error codes the users' own calls can earn (the rest are the users' mistakes). */
const USER_FACING = new Set(['reauthorization_required', 'invalid_session', 'not_found']);

export function checkAnswers(analysis: Analysis): Violation[] {
  const violations: Violation[] = [];
  const owners = new Map<string, string>();
  for (const [code, owner] of analysis.connectionOf)
    owners.set(code, `${owner.session}/${owner.connection}`);
  const wrong = (call: CallRecord, what: string, detail: string) =>
    violations.push({
      invariant: 'C3',
      what,
      detail: `${describe(call)}: ${detail}`,
      at: call.start,
    });

  for (const call of analysis.history.calls) {
    const late = call.afterSignOut !== undefined && call.afterSignOut >= SIGN_OUT_GRACE_MS;
    if (call.status >= 200 && call.status < 300) {
      if (late)
        wrong(
          call,
          'served after sign-out',
          `answered ${call.status}, ${call.afterSignOut} ms after its session's sign-out`,
        );
      whose(call, owners, wrong);
      continue;
    }
    if (late) {
      const ended = call.status === 401 && call.error === 'invalid_session';
      const transient = isTransient(call) || (call.status === 0 && unavailable(analysis, call));
      if (!ended && !transient)
        wrong(
          call,
          'served after sign-out',
          `answered ${call.status} ${call.error ?? ''}, ${call.afterSignOut} ms after its session's sign-out (not invalid_session)`,
        );
      continue;
    }
    if (call.status === 0) {
      if (!unavailable(analysis, call))
        wrong(
          call,
          'a live instance did not answer',
          `no answer in ${Math.round(call.end - call.start)} ms`,
        );
      continue;
    }
    if (call.error !== undefined) {
      const status = ERROR_STATUS[call.error as keyof typeof ERROR_STATUS];
      if (status !== call.status) {
        wrong(call, 'an undocumented answer', `${call.status} with Baton-Error ${call.error}`);
        continue;
      }
      if (call.status >= 500 && !isTransient(call))
        wrong(
          call,
          call.status === 500 ? 'a 500' : 'a 5xx without Retry-After',
          `${call.status} ${call.error}`,
        );
      else if (call.status === 429 && call.retryAfter === undefined)
        wrong(call, 'a 429 without Retry-After', call.error);
      else if (call.status < 500 && call.status !== 429 && !USER_FACING.has(call.error))
        wrong(call, 'an undocumented answer', `${call.status} ${call.error}`);
      continue;
    }
    // No Baton-Error: the license API's own answer about this call.
    const burst = analysis.history.faults
      .filter((fault) => fault.kind === 'license-api-503')
      .some((fault) => fault.start <= call.end && (fault.healed ?? Infinity) + 1000 >= call.start);
    if (call.status === 503 && burst && call.retryAfter !== undefined) continue;
    if (call.status === 401 && revokedDuring(analysis, call)) continue;
    wrong(
      call,
      "a license API's answer the soak never asked for",
      `${call.status} without Baton-Error`,
    );
  }
  // Every other route (the sign-in's pages, sessions, connections): no 500, as its access log
  // says. The users see their flows' outcomes only; the brokers' lines have every status.
  for (const { at, line } of analysis.linesMatching(/"status":500\b.*"msg":"request completed"/))
    violations.push({
      invariant: 'C3',
      what: 'a 500',
      detail: `a broker answered 500: ${line.slice(0, 300)}`,
      at: at ?? 0,
    });
  return violations;
}

/** users.me: the connection's license and owner; echo: a token of one of its own grants. */
function whose(
  call: CallRecord,
  owners: Map<string, string>,
  wrong: (call: CallRecord, what: string, detail: string) => void,
): void {
  if (call.path === 'users.me') {
    if (call.gotLicense !== call.license)
      wrong(
        call,
        "another license's data",
        `users.me answered license ${call.gotLicense ?? 'none'}`,
      );
    return;
  }
  if (call.gotChain === undefined) return;
  if (call.gotChain === null) {
    wrong(
      call,
      'a token the provider never issued',
      'the license API got an access token the tap never saw issued',
    );
    return;
  }
  const owner = owners.get(call.gotChain);
  if (owner !== `${call.session}/${call.connection}`)
    wrong(
      call,
      "another grant's data",
      `the license API got an access token of ${owner ?? 'a grant no flow made'}`,
    );
}

/**
 * The provider revoked the connection's grant while the call was under way: its token answered
 * 401, the broker refreshed once and retried (the spec's rule), and the retry's 401 is the
 * license API's own answer, passed on. Nothing tells a revocation from a path's own 401 but one
 * more refresh, which the spec's "refresh once" rules out; the next call answers
 * `reauthorization_required` (C2 checks that the connection ends disconnected).
 */
function revokedDuring(analysis: Analysis, call: CallRecord): boolean {
  return analysis
    .inForce(call.connection, call.start)
    .some(
      (chain) =>
        chain.revokedAt !== undefined &&
        chain.revokedAt >= call.start &&
        chain.revokedAt <= call.end,
    );
}

/** 503 (or another 5xx) with Retry-After: the broker's "try again shortly". */
function isTransient(call: CallRecord): boolean {
  return call.status === 503 && call.retryAfter !== undefined && Number(call.retryAfter) >= 0;
}

function unavailable(analysis: Analysis, call: CallRecord): boolean {
  return analysis.unavailable(call.instance, call.start - 1000, call.end);
}

function describe(call: CallRecord): string {
  return `call ${call.path} on connection ${call.connection} (session ${call.session}, ${call.license}) through instance ${call.instance} at ${Math.round(call.start)} ms`;
}
