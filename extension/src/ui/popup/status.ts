import { displayHost } from '../../broker-url.ts';
import { isBenign, type Problem, type ProblemCode } from '../../problems.ts';
import type { View } from '../../state/view.ts';
import { t } from '../i18n.ts';
import { problemText } from '../problem-text.ts';

/** Flow outcomes older than this are history, not news. */
export const OUTCOME_FRESH_MS = 30 * 60_000;

export type Tone = 'info' | 'success' | 'warning' | 'error' | 'progress';
export type StatusState =
  | 'idle'
  | 'connecting'
  | 'success'
  | 'notice'
  | 'cancelled'
  | 'denied'
  | 'unreachable'
  | 'permission'
  | 'error';

/**
 * What a button of the status line does: try again (refresh the list, or start the flow again
 * for `reconnectId`), grant the host permission and then try again, or dismiss the message.
 */
export type Retry =
  { readonly kind: 'refresh' } | { readonly kind: 'connect'; readonly reconnectId: string | null };
export type StatusAction =
  | { readonly kind: 'retry'; readonly retry: Retry }
  | { readonly kind: 'grant'; readonly retry: Retry }
  | { readonly kind: 'dismiss' };

export interface StatusModel {
  /** Changes only when the message does: the live region is rewritten (and announced) then. */
  readonly key: string;
  readonly state: StatusState;
  readonly tone: Tone;
  readonly text: string;
  readonly problem?: ProblemCode;
  /** A value to show as is under the message (the redirect URL the operator must allow). */
  readonly detail?: string;
  readonly actions: readonly StatusAction[];
}

const DISMISS: StatusAction = { kind: 'dismiss' };
const REFRESH: Retry = { kind: 'refresh' };

/** One connection as the list has it now. */
function connectionState(v: View, id: string): 'connected' | 'disconnected' | 'absent' {
  return v.connections.find((c) => c.id === id)?.status ?? 'absent';
}

/**
 * Which message the status line shows, by precedence: a flow in progress, then an error of the
 * popup's own, then a fresh flow outcome (failed, then succeeded), then a notice from the
 * background, then a failed list refresh; else nothing. A message about one connection ("License
 * connected.", a failed reconnection, "License disconnected.") holds only while that connection
 * is as the message left it: once it changes (revoked, reconnected elsewhere, back in the list)
 * the message is stale and the next one shows. Pure: the tables in status.test.ts.
 */
export function statusOf(v: View, localError: Problem | null, now: number): StatusModel | null {
  const flow = v.flow;
  const current = (id: string | null, expected: ReturnType<typeof connectionState>) =>
    id === null || connectionState(v, id) === expected;
  if (flow.status === 'running') {
    return {
      key: `running:${flow.startedAt}`,
      state: 'connecting',
      tone: 'progress',
      text: `${t('connectingTitle')}. ${t('connectingBody')}`,
      actions: [],
    };
  }
  if (localError !== null) return problemStatus(v, localError, 'local-error', REFRESH, now);
  if (
    flow.status === 'failed' &&
    now - flow.at < OUTCOME_FRESH_MS &&
    current(flow.reconnectId, 'disconnected')
  ) {
    const retry: Retry = { kind: 'connect', reconnectId: flow.reconnectId };
    return problemStatus(v, flow.problem, `flow-failed:${flow.at}`, retry, now);
  }
  if (
    flow.status === 'succeeded' &&
    now - flow.at < OUTCOME_FRESH_MS &&
    current(flow.connectionId, 'connected')
  ) {
    return {
      key: `flow-ok:${flow.at}`,
      state: 'success',
      tone: 'success',
      text: t(flow.reconnected ? 'outcomeReconnected' : 'outcomeConnected'),
      actions: [DISMISS],
    };
  }
  if (
    v.notice !== null &&
    (v.notice.kind !== 'disconnected' || current(v.notice.connectionId, 'absent'))
  ) {
    const notice = v.notice;
    const plain = (key: string, tone: Tone, text: string, problem?: ProblemCode) => ({
      key,
      state: 'notice' as const,
      tone,
      text,
      ...(problem === undefined ? {} : { problem }),
      actions: [DISMISS],
    });
    switch (notice.kind) {
      case 'action_failed':
        return problemStatus(v, notice.problem, `notice:${notice.problem.code}`, REFRESH, now);
      case 'signed_out':
        return plain('notice:signed_out', 'info', t('noticeSignedOut'));
      case 'signed_out_locally':
        return plain(
          'notice:signed_out_locally',
          'warning',
          t('noticeSignedOutLocally', displayHost(v.brokerUrl)),
          notice.problem.code,
        );
      case 'session_ended':
        return plain('notice:session_ended', 'warning', t('noticeSessionEnded'));
      case 'disconnected':
        return plain(`notice:disconnected:${notice.connectionId}`, 'info', t('noticeDisconnected'));
    }
  }
  if (v.sync.status === 'failed' && v.sync.problem !== null)
    return problemStatus(v, v.sync.problem, `sync:${v.sync.problem.code}`, REFRESH, now);
  return null;
}

/** A problem as the status line shows it: its sentence, a tone, and what the user can do. */
function problemStatus(
  v: View,
  problem: Problem,
  key: string,
  retry: Retry,
  now: number,
): StatusModel {
  const text = problemText(problem, v.brokerUrl, now);
  if (problem.code === 'permission_missing') {
    return {
      key,
      state: 'permission',
      tone: 'warning',
      text,
      problem: problem.code,
      actions: [{ kind: 'grant', retry }, DISMISS],
    };
  }
  return {
    key,
    state: stateOf(problem.code),
    tone: isBenign(problem.code) ? 'info' : problem.code === 'access_denied' ? 'warning' : 'error',
    text,
    problem: problem.code,
    ...(problem.redirectUrl !== undefined && { detail: problem.redirectUrl }),
    actions: [{ kind: 'retry', retry }, DISMISS],
  };
}

function stateOf(code: ProblemCode): StatusState {
  switch (code) {
    case 'access_denied':
      return 'denied';
    case 'cancelled':
      return 'cancelled';
    case 'broker_unreachable':
    case 'timeout':
      return 'unreachable';
    default:
      return 'error';
  }
}
