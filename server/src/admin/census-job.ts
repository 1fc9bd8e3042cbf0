import type { ConnectionRepository } from '../connections/records.ts';
import { keys, parseSessionKey } from '../store/keys.ts';
import type { Redis } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import { createKeyWalkJob } from './key-walk-job.ts';
import type { CensusJob } from './types.ts';

/**
 * Every key of a session (`baton:{<sid>}:…`): one walk sees both the sessions and their connection
 * records. SCAN visits every key of the keyspace whatever its MATCH, which only filters what comes
 * back: one walk of a wider pattern costs less than a walk for each kind. Other keys with a hash
 * tag (`{stats:…}`, `{admin}`…) come back too, and are not a session's (parseSessionKey).
 */
const SESSION_KEYS = 'baton:{*}:*';

/** A census finished is kept a week: the overview shows it, with when it was taken. */
const KEPT_MS = 7 * 24 * 3600 * 1000;

/** What the last census that finished counted, as kept for the overview (keys.adminCensus). */
export interface Census {
  sessions: number;
  byKeyId: Record<string, number>;
  byStatus: { connected: number; disconnected: number };
  startedAt: string;
  finishedAt: string;
}

const idle = (): CensusJob => ({
  state: 'idle',
  startedAt: null,
  finishedAt: null,
  startedBy: null,
  sessions: 0,
  connections: 0,
  byKeyId: {},
  byStatus: { connected: 0, disconnected: 0 },
  unreadable: 0,
  error: null,
});

/**
 * The census, as a job over every session's keys (key-walk-job.ts: batches, a lease, cursors per
 * master, pause and resume): sessions counted, connection records counted by the key id they are
 * sealed under and, opened, by status. Read-only. A walk resumed on another node after a failover
 * may count a key twice or miss one: a census is a figure to the nearest few, dated.
 */
export function createCensusJob(deps: {
  store: Store;
  redis: Redis | undefined;
  connections: ConnectionRepository;
  now: () => number;
  /** Keys asked for at a time (default 500). */
  batch?: number;
}) {
  const { store, connections } = deps;

  async function count(job: CensusJob, key: string): Promise<void> {
    const parsed = parseSessionKey(key);
    if (parsed?.kind === 'session') job.sessions++;
    if (parsed?.kind !== 'connection') return;
    const stored = await connections.sealed(parsed.sid, parsed.id);
    // Gone since the SCAN answered (its session ended).
    if (!stored) return;
    job.connections++;
    const kid = stored.value.split('.')[0] ?? '?';
    job.byKeyId[kid] = (job.byKeyId[kid] ?? 0) + 1;
    let status: 'connected' | 'disconnected';
    try {
      status = connections.open(parsed.sid, parsed.id, stored).status;
    } catch {
      // Under a key no longer configured (or damaged): counted by its key id, its status unknown.
      job.unreadable++;
      return;
    }
    job.byStatus[status]++;
  }

  const job = createKeyWalkJob<CensusJob>({
    ...deps,
    name: 'census',
    pattern: SESSION_KEYS,
    idle,
    visit: count,
    async finish({ sessions, byKeyId, byStatus, startedAt, finishedAt }) {
      const census: Census = {
        sessions,
        byKeyId,
        byStatus,
        startedAt: startedAt ?? '',
        finishedAt: finishedAt ?? '',
      };
      await store.set(keys.adminCensus, JSON.stringify(census), KEPT_MS);
    },
  });

  return {
    ...job,
    /** The last census that finished, or null (none in the last week). */
    async last(): Promise<Census | null> {
      const raw = await store.get(keys.adminCensus);
      return raw === null ? null : (JSON.parse(raw) as Census);
    },
  };
}
export type CensusJobs = ReturnType<typeof createCensusJob>;
