import type { Keyring } from '../base/crypto.ts';
import type { ConnectionRepository } from '../connections/records.ts';
import type { RefreshOutcomes } from '../connections/refresh/outcomes.ts';
import { EVENT_SHARDS, keys } from '../store/keys.ts';
import { bounded, type Redis } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';
import type { Census } from './census-job.ts';
import type { CensusJob, Overview } from './types.ts';
import type { Walks } from './walk.ts';

const shards = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

/** Where a master is (host:port), never its credentials. */
function addressOf(redis: Redis, pinged: string): string {
  if (pinged !== '') return pinged;
  // One master: the Sentinel's current one, or the URL's host (a URL's password is not its host).
  const client = redis.client as {
    getMasterNode?: () => { host: string; port: number } | undefined;
    options?: { url?: string };
  };
  const master = client.getMasterNode?.();
  if (master) return `${master.host}:${master.port}`;
  return URL.parse(client.options?.url ?? '')?.host ?? 'unknown';
}

/** Each master: whether it answered a PING within the command bound, and how fast. */
async function masters(redis: Redis | undefined): Promise<Overview['redis']['masters']> {
  if (!redis) return [];
  const took: number[] = [];
  let asked = 0;
  // pingMasters asks each master in turn through this bound: the n-th call is the n-th answer.
  const pinged = await redis.pingMasters(<T>(command: Promise<T>) => {
    const n = asked++;
    const start = performance.now();
    return bounded(command).then((answer) => {
      took[n] = Math.round((performance.now() - start) * 10) / 10;
      return answer;
    });
  });
  return pinged.map((each, n) => ({
    address: addressOf(redis, each.address),
    up: each.answered,
    latencyMs: each.answered ? (took[n] ?? null) : null,
  }));
}

/**
 * The overview an operator opens first. Every figure comes from something kept for it (the
 * connections index, the events' shard counters, per-minute refresh counters), so that it stays
 * quick at a million sessions; what only a walk of the keyspace can tell (sessions, records by key
 * id) is the last census's (census-job.ts), dated, unless `walk` asks for a count now, or the store
 * is embedded (a walk of memory is quick).
 */
export function createOverview(deps: {
  store: Store;
  redis: Redis | undefined;
  keyring: Keyring;
  connections: ConnectionRepository;
  refreshes: RefreshOutcomes;
  walks: Walks;
  eventsEnabled: boolean;
  deadLetters: { counts(): Promise<{ total: number; byReason: Record<string, number> }> };
  census: { last(): Promise<Census | null>; state(): Promise<CensusJob> };
  build: { version: string; revision: string };
  now: () => number;
}) {
  const { store, redis, keyring, connections, walks } = deps;
  const sum = async (each: (shard: number) => Promise<number>): Promise<number> =>
    (await Promise.all(shards.map(each))).reduce((total, count) => total + count, 0);

  /** Sessions, and records by the key id they are sealed under: a walk. */
  async function walked(): Promise<{ sessions: number; byKeyId: Record<string, number> }> {
    let sessions = 0;
    for await (const _session of walks.sessionKeys('session')) sessions++;
    const byKeyId: Record<string, number> = {};
    for await (const { sid, id } of walks.sessionKeys('connection')) {
      const stored = await connections.sealed(sid, id);
      const kid = stored?.value.split('.')[0];
      if (kid !== undefined) byKeyId[kid] = (byKeyId[kid] ?? 0) + 1;
    }
    return { sessions, byKeyId };
  }

  return async function overview(options: { walk?: boolean } = {}): Promise<Overview> {
    const walk = options.walk === true || !redis ? await walked() : null;
    const takenAt = walk ? new Date(deps.now()).toISOString() : null;
    const [format, pinged, byStatus, refreshes, waiting, due, dead, census, job] =
      await Promise.all([
        store.get(keys.dataFormat),
        masters(redis),
        connections.countByStatus(),
        deps.refreshes.lastHour(),
        sum(async (shard) => Number(await store.get(keys.eventsBacklog(shard)))),
        sum((shard) => store.scheduleSize(keys.eventsDue(shard))),
        deps.deadLetters.counts(),
        walk ? null : deps.census.last(),
        deps.census.state(),
      ]);
    const counted = walk ?? census;
    return {
      build: deps.build,
      dataFormat: Number(format ?? 1),
      redis: { topology: redis?.mode ?? 'embedded', masters: pinged },
      sessions: counted?.sessions ?? null,
      connections: { byStatus, byKeyId: counted?.byKeyId ?? null, activeKeyId: keyring.activeKid },
      census: { takenAt: takenAt ?? census?.finishedAt ?? null, state: job.state },
      refreshes,
      events: {
        enabled: deps.eventsEnabled,
        // The shards' counts may dip below 0 for a moment (a pop counted before its push).
        waiting: Math.max(0, waiting),
        sessionsDue: due,
        deadLetters: dead.total,
        deadLettersByReason: dead.byReason,
      },
    };
  };
}
