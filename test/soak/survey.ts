/**
 * The soak's reads of Redis itself, straight from each master (not through the proxies): whether
 * every outbox is delivered (delivered), and the survey of every key at the baseline and at the
 * end (scanRedis), which C6 judges.
 */
import { createHash } from 'node:crypto';
import { eventShard, keys } from '@baton/server';
import { createClient, createCluster } from 'redis';
import { sessionRef } from '../../server/src/ops/events.ts';
import { kindOf, sessionOf } from '../support/key-kinds.ts';
import { redisCli } from '../support/redis-cluster.ts';
import { documented } from '../support/storage-keys.ts';
import { until } from '../support/wait.ts';
import type { RedisEnd } from './history.ts';
import type { SoakSystem } from './system.ts';

/** Each master's own client (the checker reads Redis directly, not through the proxies). */
const clientOf = (url: string) => createClient({ url });

async function withMasters<T>(
  system: SoakSystem,
  work: (client: ReturnType<typeof clientOf>, port: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  for (const server of await system.redis.masters()) {
    const client = clientOf(server.url);
    await client.connect();
    try {
      results.push(await work(client, server.port));
    } finally {
      await client.close();
    }
  }
  return results;
}

/**
 * A client that reaches any key wherever it lives (a Cluster's, through the slots; else the
 * master's), for reads of keys other than the scanned one's slot.
 */
async function anyKey(system: SoakSystem) {
  const env = system.redis.env();
  const nodes = env.REDIS_CLUSTER_NODES?.split(',');
  const client = nodes
    ? createCluster({ rootNodes: nodes.map((url) => ({ url })) })
    : clientOf((await system.redis.masters())[0]!.url);
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Every master's `used_memory_dataset`, summed. */
async function datasetBytes(system: SoakSystem): Promise<number> {
  let total = 0;
  for (const server of await system.redis.masters()) {
    const info = await redisCli(server.port, 'info', 'memory');
    total += Number(/used_memory_dataset:(\d+)/.exec(info)?.[1] ?? 0);
  }
  return total;
}

/**
 * Waits (three minutes at most) until no session's outbox holds an event: every event delivered
 * or dead-lettered. Answers the outboxes still waiting then, each described.
 */
export async function delivered(
  system: SoakSystem,
  labels: Map<string, string>,
): Promise<string[]> {
  const waiting = () =>
    withMasters(system, async (client) => {
      const found: string[] = [];
      const reader = await anyKey(system);
      for await (const batch of client.scanIterator({ MATCH: keys.outbox('*'), COUNT: 1000 }))
        for (const key of batch) {
          const sid = sessionOf(key)!;
          const [length, head, due, lease, attempts] = await Promise.all([
            client.lLen(key),
            client.lIndex(key, 0),
            reader.zScore(keys.eventsDue(eventShard(sid)), sid),
            client.pTTL(keys.outboxLease(sid)),
            client.get(keys.outboxAttempts(sid)),
          ]);
          const type = head === null ? '?' : (JSON.parse(head) as { type: string }).type;
          found.push(
            `${labels.get(sessionRef(sid)) ?? 'a session no user had'}: ${length} event(s), head ${type}, ${due === null ? 'not scheduled' : `due at ${new Date(due).toISOString()}`}, lease ${lease > 0 ? `${lease} ms left` : 'none'}, ${attempts ?? 0} attempt(s)`,
          );
        }
      await reader.close();
      return found;
    }).then((lists) => lists.flat());
  try {
    await until(async () => (await waiting()).length === 0, {
      deadlineMs: 180_000,
      intervalMs: 500,
      what: 'every outbox to be delivered',
    });
    return [];
  } catch {
    return waiting();
  }
}

/** Keys that end this soon are short-lived bookkeeping: state claims, rate limits' windows. */
const SHORT_LIVED_MS = 11 * 60_000;
/** A session's key that ends this soon is bookkeeping (a delivery lease, a lock), not a leak. */
const LEFT_BEHIND_MS = 120_000;

/**
 * Above this many keys in all (a prefilled store), the TTL of the sessions no user had is looked at
 * for one session in TTL_SAMPLE only: one PTTL a key took over five minutes at a million sessions.
 * Whether a key's kind is documented is asked of every key, the users' keys and the keys of no
 * session are all looked at, and a kind without a TTL shows in any sample of its sessions.
 */
const SAMPLE_ABOVE_KEYS = 100_000;
const TTL_SAMPLE = 100;

/** Whether session `sid` is among the one in `every` whose keys' TTLs are looked at. */
const sampled = (sid: string, every: number): boolean =>
  every === 1 || createHash('sha256').update(sid).digest().readUInt32BE(0) % every === 0;

/**
 * Every key on every master: the kinds docs/architecture.md does not document or that have no
 * TTL, the keys of `ours` (session refs) still there past two minutes, and what the short-lived
 * keys hold, with the masters' `used_memory_dataset`.
 */
export async function scanRedis(
  system: SoakSystem,
  ours: ReadonlyMap<string, string>,
): Promise<Omit<RedisEnd, 'baselineBytes' | 'finalBytes' | 'undelivered'> & { bytes: number }> {
  const problems = new Map<string, number>();
  const sessionKeys: Record<string, number> = {};
  const leftBehind: string[] = [];
  const problem = (line: string) => problems.set(line, (problems.get(line) ?? 0) + 1);
  let expiringBytes = 0;
  let keys = 0;
  const total = (await withMasters(system, (client) => client.dbSize())).reduce((a, b) => a + b, 0);
  const every = total > SAMPLE_ABOVE_KEYS ? TTL_SAMPLE : 1;
  await withMasters(system, async (client) => {
    for await (const batch of client.scanIterator({ COUNT: 1000 })) {
      keys += batch.length;
      const looked = batch.filter((key) => {
        if (!documented(key)) problem(`${kindOf(key)}: not documented`);
        const sid = sessionOf(key);
        return sid === undefined || ours.has(sessionRef(sid)) || sampled(sid, every);
      });
      const ttls = await Promise.all(looked.map((key) => client.pTTL(key)));
      await Promise.all(
        looked.map(async (key, index) => {
          const ttl = ttls[index]!;
          if (ttl === -2) return;
          const kind = kindOf(key);
          if (ttl === -1 && documented(key)) problem(`${kind}: without a TTL`);
          const sid = sessionOf(key);
          const ref = sid === undefined ? undefined : sessionRef(sid);
          if (ref !== undefined && ours.has(ref) && (ttl === -1 || ttl > LEFT_BEHIND_MS)) {
            sessionKeys[kind] = (sessionKeys[kind] ?? 0) + 1;
            const id = /:connection:([^:]+)$/.exec(key)?.[1];
            if (leftBehind.length < 20)
              leftBehind.push(
                `${ours.get(ref)} ${kind}${id ? ` (connection ${id})` : ''}, TTL ${Math.round(ttl / 1000)} s`,
              );
          }
          if (sid === undefined && ttl >= 0 && ttl <= SHORT_LIVED_MS) {
            const bytes = Number((await client.memoryUsage(key)) ?? 0);
            expiringBytes += bytes;
          }
        }),
      );
    }
  });
  return {
    problems: [...problems].map(([line, count]) => `${line} (${count})`),
    sessionKeys,
    leftBehind,
    expiringBytes,
    keys,
    ...(every > 1 ? { ttlSample: every } : {}),
    bytes: await datasetBytes(system),
  };
}
