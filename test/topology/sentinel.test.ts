import { describe, expect, it } from 'vitest';
import { callApi, connectVia, type Connected } from '../support/client.ts';
import { redisCli } from '../support/redis-cluster.ts';
import { until } from '../support/wait.ts';
import { listed, topologyScenarios } from './scenarios.ts';
import { redisSentinel } from '../support/world.ts';
import { useTopology } from './topology.ts';

const world = useTopology(redisSentinel());

/** WAIT commands the master has run, from its INFO commandstats. */
async function waits(port: number): Promise<number> {
  const stats = await redisCli(port, 'info', 'commandstats');
  return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe('Redis Sentinel (a master, a replica, three sentinels), three broker instances', () => {
  topologyScenarios(world);

  it('killing the master mid-run fails over with no connection lost, mid-refresh included', async () => {
    const LICENSES = ['lic-1001', 'lic-1002', 'lic-2001'];
    const client = world.client();
    try {
      const sessions: Connected[] = [];
      for (const license of LICENSES) {
        world.control.setConsent({ mode: 'approve', licenseId: license });
        sessions.push(await connectVia(client));
      }
      // Every connection's refresh token rotates once, so what Redis holds is the newest pair.
      for (const license of LICENSES) world.control.expireAccessTokens(license);
      for (const [index, session] of sessions.entries())
        expect((await callApi(client, index, session)).status).toBe(200);
      const master = await world.redis.currentMaster();
      expect(await waits(master.port)).toBeGreaterThan(0);

      // Rounds of calls keep coming through all three while the master dies, each round after
      // every access token expired: refreshes run on the dying master, and on the promoted one.
      // Never while a refresh may still be going on, for a token expired between a refresh and
      // its retry is rightly a 401: after a round with a 503, a refresh whose pair met the
      // failover may still be storing it (its lock held), so the next round expires nothing.
      const unexpected: string[] = [];
      let running = true;
      let rounds = 0;
      let settled = true;
      const load = (async () => {
        for (; running; rounds++) {
          if (settled) for (const license of LICENSES) world.control.expireAccessTokens(license);
          settled = true;
          await Promise.all(
            sessions.map(async (session, index) => {
              const via = rounds + index;
              const response = await callApi(client, via, session);
              const body = await response.text();
              if (response.status !== 200) settled = false;
              // 503 with Retry-After is the answer while no master takes writes; nothing else is.
              if (response.status !== 200 && response.status !== 503)
                unexpected.push(`round ${rounds}, instance ${via % 3}: ${response.status} ${body}`);
            }),
          );
        }
      })();
      await world.redis.killMaster();
      const promoted = await world.redis.waitForFailover(master);
      await world.ready(20_000);
      const roundsAtReady = rounds;
      await until(() => rounds >= roundsAtReady + 3, { what: 'three more rounds of calls' });
      running = false;
      await load;
      expect(unexpected).toEqual([]);
      expect(promoted.port).not.toBe(master.port);

      // Every connection is still there and usable on every instance, and refreshes once more
      // with the refresh token Redis kept: had a rotated one been lost, this would be a reuse.
      for (const license of LICENSES) world.control.expireAccessTokens(license);
      for (const [index, session] of sessions.entries()) {
        for (const via of [0, 1, 2]) expect(await listed(client, via, session)).toBe('connected');
        const response = await callApi(client, index, session);
        await response.arrayBuffer();
        expect(response.status).toBe(200);
      }
      expect(world.control.counters()).toMatchObject({ reuse_detected: 0, token_errors: 0 });
    } finally {
      await client.close();
    }
  });
});
