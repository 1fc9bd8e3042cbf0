/**
 * A fake of the operators' use cases for the admin API's unit tests: canned answers, every call
 * recorded with its arguments. Only tests import it.
 */
import { idleReencryptJob } from '../../admin/reencrypt-job.ts';
import type {
  ActionResult,
  Actor,
  AdminUseCases,
  CensusJob,
  ConnectionView,
  DeadLetterView,
  Overview,
  ReencryptJob,
} from '../../admin/types.ts';

export const OVERVIEW: Overview = {
  build: { version: '1.1.0-test', revision: 'abc123' },
  dataFormat: 3,
  redis: {
    topology: 'standalone',
    masters: [{ address: '127.0.0.1:6379', up: true, latencyMs: 1 }],
  },
  sessions: 2,
  connections: {
    byStatus: { connected: 1, disconnected: 1 },
    byKeyId: { k1: 2 },
    activeKeyId: 'k1',
  },
  census: { takenAt: '2026-01-01T06:12:00.000Z', state: 'done' },
  refreshes: { refreshed: 3, rejected: 1, transient: 0, lost: 0 },
  events: {
    enabled: true,
    waiting: 0,
    sessionsDue: 0,
    deadLetters: 1,
    deadLettersByReason: { expired: 1 },
  },
};

export const CONNECTION: ConnectionView = {
  id: 'Q2Fuz3Jhdm9sdXRpb24xMA',
  sessionRef: `ses_${'A'.repeat(22)}`,
  licence: 'https://api.example.com/v1',
  status: 'connected',
  createdAt: '2026-01-01T00:00:00.000Z',
  lastRefreshAt: null,
  lastRefreshOutcome: null,
  disconnectedReason: null,
  lastUsedAt: '2026-01-01T00:00:00.000Z',
  keyId: 'k1',
};

export const DEAD_LETTER: DeadLetterView = {
  id: 'msg_AAAAAAAAAAAAAAAAAAAAAA',
  type: 'connection.disconnected',
  sessionRef: `ses_${'A'.repeat(22)}`,
  reason: 'expired',
  attempts: 12,
  recordedAt: '2026-01-01T00:00:00.000Z',
  deadAt: '2026-01-02T00:00:00.000Z',
  lastOutcome: 'status 500',
};

export const JOB: ReencryptJob = idleReencryptJob('k1');

export const CENSUS: CensusJob = {
  state: 'done',
  startedAt: '2026-01-01T06:10:00.000Z',
  finishedAt: '2026-01-01T06:12:00.000Z',
  startedBy: 'alice',
  sessions: 2,
  connections: 2,
  byKeyId: { k1: 2 },
  byStatus: { connected: 1, disconnected: 1 },
  unreadable: 0,
  error: null,
};

export interface FakeUseCases extends AdminUseCases {
  calls: { name: string; args: unknown[] }[];
  /** What the next action answers (default: ok, one thing changed). */
  result: ActionResult;
  /** Thrown by every use case when set (the store down, say). */
  failWith: unknown;
}

export function fakeUseCases(): FakeUseCases {
  const fake: FakeUseCases = {
    calls: [],
    result: { ok: true, count: 1 },
    failWith: undefined,
    overview: () => call('overview', [], OVERVIEW),
    findConnections: (query, limit) => call('findConnections', [query, limit], [CONNECTION]),
    disconnect: (id: string, actor: Actor) => call('disconnect', [id, actor], fake.result),
    endSession: (ref, actor) => call('endSession', [ref, actor], fake.result),
    endSessionsOfLicence: (licence, actor) =>
      call('endSessionsOfLicence', [licence, actor], fake.result),
    deadLetters: (options) => call('deadLetters', [options], [DEAD_LETTER]),
    redeliver: (id, actor) => call('redeliver', [id, actor], fake.result),
    discard: (id, actor) => call('discard', [id, actor], fake.result),
    startReencrypt: (actor) => call('startReencrypt', [actor], { ...JOB, state: 'running' }),
    reencryptJob: () => call('reencryptJob', [], JOB),
    startCensus: (actor) => call('startCensus', [actor], { ...CENSUS, state: 'running' }),
    censusJob: () => call('censusJob', [], CENSUS),
    sweepEvents: (actor) => call('sweepEvents', [actor], { ok: true, outboxes: 4 }),
  };
  function call<T>(name: string, args: unknown[], answer: T): Promise<T> {
    fake.calls.push({ name, args });
    return fake.failWith === undefined ? Promise.resolve(answer) : Promise.reject(fake.failWith);
  }
  return fake;
}
