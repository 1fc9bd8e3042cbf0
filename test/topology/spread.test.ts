import { createLogger, loadConfig, startBroker, type StartedBroker } from '@baton/server';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisCli, type RedisCluster } from '../support/redis-cluster.ts';
import { sandboxGrant, type Grant } from '../support/sandbox-grant.ts';
import { redisCluster } from '../support/world.ts';
import { PUBLIC_URL, useTopology } from './topology.ts';

/**
 * Issue 31's Cluster spread: with S6's sessions (test/bench/s6.ts: one connection each, made by
 * the broker's own sessions and connection records) on a 3-master Cluster, and proxied calls over
 * random sessions through the three broker processes, every master holds and serves its share: keys
 * (INFO keyspace) and data commands (INFO commandstats) per master within ±15 % of the mean. A key
 * every session writes to, on one master, fails it.
 */
const SESSIONS = 30_000;
const CALLS = 9_000;
const LICENSE = 'lic-1001';
const TOLERANCE = 0.15;
/** Commands that are no data command: the clients' upkeep, and what this test asks itself. */
const UPKEEP = new Set([
  'auth',
  'client',
  'cluster',
  'command',
  'config',
  'dbsize',
  'hello',
  'info',
  'latency',
  'memory',
  'ping',
  'readonly',
  'scan',
  'select',
  'slowlog',
]);

const world = useTopology(redisCluster({ masters: 3 }));

/** Keys on each master (INFO keyspace), in the cluster's node order. */
async function keysPerMaster(cluster: RedisCluster): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const info = await redisCli(node.port, 'info', 'keyspace');
      return Number(/db0:keys=(\d+)/.exec(info)?.[1] ?? 0);
    }),
  );
}

/** Data commands each master has run (INFO commandstats, without UPKEEP), in node order. */
async function commandsPerMaster(cluster: RedisCluster): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const info = await redisCli(node.port, 'info', 'commandstats');
      let calls = 0;
      for (const [, name = '', count = '0'] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
        if (!UPKEEP.has(name.split('|')[0]!)) calls += Number(count);
      return calls;
    }),
  );
}

const minus = (after: number[], before: number[]) => after.map((n, i) => n - before[i]!);

/** Each figure's distance from the mean, as a fraction of it. */
const offMean = (figures: number[]): number[] => {
  const mean = figures.reduce((sum, n) => sum + n, 0) / figures.length;
  return figures.map((n) => Math.abs(n - mean) / mean);
};

const show = (label: string, figures: number[]) =>
  `${label}: ${figures.join(' / ')} (${offMean(figures)
    .map((off) => `${(off * 100).toFixed(1)} %`)
    .join(', ')} off the mean)`;

interface Made {
  token: string;
  connectionId: string;
}

/** Real grants at the sandbox (scripted consent, then the code exchange), which sessions share. */
async function grants(agent: Agent, providerUrl: string, count: number): Promise<Grant[]> {
  world.control.setConsent({ mode: 'approve', licenseId: LICENSE });
  return Promise.all(
    Array.from({ length: count }, () =>
      sandboxGrant({
        providerUrl,
        apiUrl: `${providerUrl}/licenses/${LICENSE}`,
        redirectUri: `${PUBLIC_URL}/auth/callback`,
        dispatcher: agent,
      }),
    ),
  );
}

describe('Redis Cluster (3 masters): S6 sessions spread over the masters', () => {
  const agent = new Agent({ connections: 32 });
  /** A broker composed as the world's are, never listening, its reads all reaching Redis (no cache). */
  let composed: StartedBroker | undefined;
  beforeAll(async () => {
    const config = loadConfig(world.env);
    if (!config.redis.topology) throw new Error('the world gave the brokers no Redis');
    composed = await startBroker(
      { ...config, redis: { ...config.redis, cacheEntries: 0 } },
      { now: Date.now, dispatcher: agent, log: createLogger('warn') },
    );
  });
  afterAll(async () => {
    await composed?.stop();
    await composed?.store.close();
    await agent.close();
  });

  it(`${SESSIONS.toLocaleString('en-US')} sessions and ${CALLS.toLocaleString('en-US')} calls over random ones: keys and data commands per master within ±15 % of the mean`, async () => {
    const cluster = world.redis;
    const { services } = composed!;
    const providerUrl = world.env.AUTH_URL!;
    const pool = await grants(agent, providerUrl, 50);

    // The sessions, written as the broker writes them (S6's shortcut), 64 at a time.
    const commands0 = await commandsPerMaster(cluster);
    const made: Made[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < SESSIONS) {
          const n = next++;
          const { token, sid } = await services.sessions.create();
          const record = {
            id: randomBytes(16).toString('base64url'),
            apiUrl: `${providerUrl}/licenses/${LICENSE}`,
            status: 'connected' as const,
            connectedAt: Date.now(),
            tokens: pool[n % pool.length]!,
          };
          if (!(await services.connections.save(sid, record, 0)))
            throw new Error('a new connection record could not be saved');
          made.push({ token, connectionId: record.id });
        }
      }),
    );
    const commands1 = await commandsPerMaster(cluster);

    // Calls over random sessions, each through a broker picked at random, 32 at a time.
    const statuses = new Map<number, number>();
    let sent = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (sent < CALLS) {
          sent++;
          const session = made[Math.floor(Math.random() * made.length)]!;
          const broker = world.processes[Math.floor(Math.random() * world.processes.length)]!;
          const answer = await request(
            `${broker.url}/connections/${session.connectionId}/api/users.me`,
            { dispatcher: agent, headers: { authorization: `Bearer ${session.token}` } },
          );
          await answer.body.dump();
          statuses.set(answer.statusCode, (statuses.get(answer.statusCode) ?? 0) + 1);
        }
      }),
    );
    const commands2 = await commandsPerMaster(cluster);
    const keys = await keysPerMaster(cluster);

    const making = minus(commands1, commands0);
    const calling = minus(commands2, commands1);
    const both = minus(commands2, commands0);
    console.log(
      [
        `[spread] ${SESSIONS} sessions, ${CALLS} calls (${[...statuses].map(([status, n]) => `${n} × ${status}`).join(', ')}), per master:`,
        show('  keys', keys),
        show('  data commands, making the sessions', making),
        show('  data commands, the calls', calling),
        show('  data commands, both', both),
      ].join('\n'),
    );

    expect(Object.fromEntries(statuses)).toEqual({ 200: CALLS });
    expect(keys.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(2 * SESSIONS);
    const within = (figures: number[]) => offMean(figures).every((off) => off <= TOLERANCE);
    expect(within(keys), show('keys', keys)).toBe(true);
    expect(within(calling), show('data commands, the calls', calling)).toBe(true);
    expect(within(both), show('data commands, both', both)).toBe(true);
  }, 600_000);
});
