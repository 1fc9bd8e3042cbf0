import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Problem } from '../../problems.ts';
import {
  emptyView,
  type ConnectionView,
  type FlowState,
  type Notice,
  type SyncState,
  type View,
} from '../../state/view.ts';
import { OUTCOME_FRESH_MS, statusOf, type StatusModel } from './status.ts';

const NOW = Date.UTC(2026, 10, 24, 12);
const BROKER = 'https://broker.example.be';

const connection = (id: string, status: ConnectionView['status']): ConnectionView => ({
  id,
  status,
  apiOrigin: 'https://api.provider.example',
  connectedAt: '2026-11-01T10:00:00Z',
  accessExpiresAt: null,
  disconnectedReason: status === 'disconnected' ? 'refresh_rejected' : null,
  user: { status: 'loaded', record: { name: 'An Peeters' }, fetchedAt: NOW },
});

/** Signed in with c1 connected (the last flow's license) and c2 disconnected (being reconnected). */
const view = (
  parts: {
    flow?: FlowState;
    notice?: Notice | null;
    sync?: SyncState;
    connections?: ConnectionView[];
  } = {},
): View => ({
  ...emptyView(BROKER),
  signedIn: true,
  connections: [connection('c1', 'connected'), connection('c2', 'disconnected')],
  ...parts,
});

const running: FlowState = { status: 'running', locale: 'nl', reconnectId: null, startedAt: NOW };
const failed = (problem: Problem, at = NOW - 1000): FlowState => ({
  status: 'failed',
  problem,
  reconnectId: 'c2',
  at,
});
const succeeded = (at = NOW - 1000): FlowState => ({
  status: 'succeeded',
  connectionId: 'c1',
  reconnected: false,
  at,
});
const syncFailed: SyncState = { status: 'failed', problem: { code: 'timeout' }, at: null };

/** The parts of a status that the table pins (its text is the translation's business). */
const shape = (model: StatusModel | null) =>
  model === null
    ? null
    : {
        key: model.key,
        state: model.state,
        tone: model.tone,
        problem: model.problem,
        ...(model.detail !== undefined && { detail: model.detail }),
        actions: model.actions.map((action) =>
          action.kind === 'dismiss'
            ? 'dismiss'
            : `${action.kind}:${action.retry.kind === 'refresh' ? 'refresh' : `connect(${action.retry.reconnectId})`}`,
        ),
      };

beforeAll(() => {
  // The messages themselves are the translations' business (locales.test.ts): keys will do here.
  fakeBrowser.i18n.getMessage = ((key: string) => key) as typeof fakeBrowser.i18n.getMessage;
});

describe('which message the status line shows', () => {
  it.each<[string, View, Problem | null, ReturnType<typeof shape>]>([
    ['nothing to say', view(), null, null],
    [
      'a flow in progress wins over everything',
      view({ flow: running, notice: { kind: 'signed_out' }, sync: syncFailed }),
      { code: 'unexpected' },
      {
        key: `running:${NOW}`,
        state: 'connecting',
        tone: 'progress',
        problem: undefined,
        actions: [],
      },
    ],
    [
      "the popup's own error comes next, retried by a refresh",
      view({ flow: failed({ code: 'access_denied' }), sync: syncFailed }),
      { code: 'unexpected' },
      {
        key: 'local-error',
        state: 'error',
        tone: 'error',
        problem: 'unexpected',
        actions: ['retry:refresh', 'dismiss'],
      },
    ],
    [
      'a fresh denial: a warning, retried by starting that flow again',
      view({ flow: failed({ code: 'access_denied' }), notice: { kind: 'signed_out' } }),
      null,
      {
        key: `flow-failed:${NOW - 1000}`,
        state: 'denied',
        tone: 'warning',
        problem: 'access_denied',
        actions: ['retry:connect(c2)', 'dismiss'],
      },
    ],
    [
      'a cancelled flow is information, not an error',
      view({ flow: failed({ code: 'cancelled' }) }),
      null,
      {
        key: `flow-failed:${NOW - 1000}`,
        state: 'cancelled',
        tone: 'info',
        problem: 'cancelled',
        actions: ['retry:connect(c2)', 'dismiss'],
      },
    ],
    [
      'an unreachable broker',
      view({ flow: failed({ code: 'broker_unreachable' }) }),
      null,
      {
        key: `flow-failed:${NOW - 1000}`,
        state: 'unreachable',
        tone: 'error',
        problem: 'broker_unreachable',
        actions: ['retry:connect(c2)', 'dismiss'],
      },
    ],
    [
      'a missing host permission offers to grant it, then retry',
      view({ flow: failed({ code: 'permission_missing' }) }),
      null,
      {
        key: `flow-failed:${NOW - 1000}`,
        state: 'permission',
        tone: 'warning',
        problem: 'permission_missing',
        actions: ['grant:connect(c2)', 'dismiss'],
      },
    ],
    [
      'a refused redirect URL shows the URL the operator must allow',
      view({
        flow: failed({ code: 'redirect_not_allowed', redirectUrl: 'https://x.chromiumapp.org/' }),
      }),
      null,
      {
        key: `flow-failed:${NOW - 1000}`,
        state: 'error',
        tone: 'error',
        problem: 'redirect_not_allowed',
        detail: 'https://x.chromiumapp.org/',
        actions: ['retry:connect(c2)', 'dismiss'],
      },
    ],
    [
      'an old flow outcome is history: the notice shows',
      view({
        flow: failed({ code: 'access_denied' }, NOW - OUTCOME_FRESH_MS),
        notice: { kind: 'session_ended' },
      }),
      null,
      {
        key: 'notice:session_ended',
        state: 'notice',
        tone: 'warning',
        problem: undefined,
        actions: ['dismiss'],
      },
    ],
    [
      'a fresh success',
      view({ flow: succeeded(), sync: syncFailed }),
      null,
      {
        key: `flow-ok:${NOW - 1000}`,
        state: 'success',
        tone: 'success',
        problem: undefined,
        actions: ['dismiss'],
      },
    ],
    [
      'a failed action notice is retried by a refresh',
      view({ notice: { kind: 'action_failed', problem: { code: 'server_error' } } }),
      null,
      {
        key: 'notice:server_error',
        state: 'error',
        tone: 'error',
        problem: 'server_error',
        actions: ['retry:refresh', 'dismiss'],
      },
    ],
    [
      'signed out locally names its problem',
      view({ notice: { kind: 'signed_out_locally', problem: { code: 'timeout' } } }),
      null,
      {
        key: 'notice:signed_out_locally',
        state: 'notice',
        tone: 'warning',
        problem: 'timeout',
        actions: ['dismiss'],
      },
    ],
    [
      'a notice wins over a failed refresh',
      view({
        notice: { kind: 'disconnected', connectionId: 'c3' },
        sync: syncFailed,
      }),
      null,
      {
        key: 'notice:disconnected:c3',
        state: 'notice',
        tone: 'info',
        problem: undefined,
        actions: ['dismiss'],
      },
    ],
    [
      'a failed refresh, last',
      view({ flow: succeeded(NOW - OUTCOME_FRESH_MS - 1), sync: syncFailed }),
      null,
      {
        key: 'sync:timeout',
        state: 'unreachable',
        tone: 'error',
        problem: 'timeout',
        actions: ['retry:refresh', 'dismiss'],
      },
    ],
  ])('%s', (_name, v, localError, expected) => {
    expect(shape(statusOf(v, localError, NOW))).toEqual(expected);
  });
});

describe('a message about one connection goes when that connection changes', () => {
  it.each<[string, View, string | null]>([
    [
      '"connected" goes once that licence shows as disconnected (revoked since)',
      view({ flow: succeeded(), connections: [connection('c1', 'disconnected')] }),
      null,
    ],
    [
      '"connected" goes once that licence is gone, and the next message shows',
      view({ flow: succeeded(), connections: [], notice: { kind: 'session_ended' } }),
      'notice:session_ended',
    ],
    [
      '"connected" stays while another licence changes',
      view({
        flow: succeeded(),
        connections: [connection('c1', 'connected'), connection('c3', 'disconnected')],
      }),
      `flow-ok:${NOW - 1000}`,
    ],
    [
      'a failed reconnection goes once that licence is connected again',
      view({
        flow: failed({ code: 'access_denied' }),
        connections: [connection('c2', 'connected')],
      }),
      null,
    ],
    [
      'a failed reconnection goes with its licence',
      view({ flow: failed({ code: 'cancelled' }), connections: [connection('c1', 'connected')] }),
      null,
    ],
    [
      '"disconnected" goes once that licence is back in the list',
      view({ notice: { kind: 'disconnected', connectionId: 'c1' }, sync: syncFailed }),
      'sync:timeout',
    ],
  ])('%s', (_name, v, key) => {
    expect(statusOf(v, null, NOW)?.key ?? null).toBe(key);
  });
});
