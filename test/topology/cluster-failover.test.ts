import { routes } from '@baton/shared';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { connectVia } from '../support/client.ts';
import { until } from '../support/wait.ts';
import { redisCluster } from '../support/world.ts';
import { useTopology } from './topology.ts';

const ADMIN = fileURLToPath(new URL('../../server/src/admin.ts', import.meta.url));
/** What docs/operations.md promises: the heartbeat's liveness window plus one command's bound. */
const BOUND_MS = 1000 + 1000;
/** What a loaded 2-core machine may add to it: heartbeats and probes are real-time timers here. */
const SLACK_MS = 3000;

const world = useTopology(redisCluster({ masters: 3, replicas: 1 }));
// Runs before the world stops its servers (hooks unwind in reverse): a node still SIGSTOPped by
// a failed test would never exit.
afterAll(() => {
  for (const server of world.redis.servers) server.resume();
});

it("a session revoked while its slot's master hangs is refused on every broker within the bound", async () => {
  const cluster = world.redis;
  const client = world.client();
  world.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
  const session = await connectVia(client);
  const sid = createHash('sha256').update(session.token).digest('base64url');
  const statuses = async () =>
    Promise.all(
      [0, 1, 2].map(async (via) => {
        // Bounded: a starved broker must fail this probe, not hang the test.
        const response = await client
          .fetch(routes.proxy(session.id, 'users.me'), {
            via,
            headers: { authorization: `Bearer ${session.token}` },
            timeoutMs: 5_000,
          })
          .catch(() => undefined);
        await response?.arrayBuffer();
        return response?.status ?? 0;
      }),
    );
  try {
    // Every broker holds the session and its record in its cache.
    expect(await statuses()).toEqual([200, 200, 200]);

    const master = await cluster.masterOf(`baton:{${sid}}:session`);
    master.pause();
    const paused = performance.now();
    const signOut = await client.fetch(routes.session, {
      via: 0,
      method: 'DELETE',
      headers: { authorization: `Bearer ${session.token}` },
    });
    expect(signOut.status).toBe(503);

    // Within the bound, no broker answers from its copy any more: 401 or 503, never 200.
    await until(async () => !(await statuses()).includes(200), {
      deadlineMs: 20_000,
      what: 'every broker to stop answering from its copy',
      intervalMs: 50,
    });
    // Slack for a loaded 2-core machine: the bound is a heartbeat's, on the real clock.
    expect(performance.now() - paused).toBeLessThan(BOUND_MS + SLACK_MS);

    // The replica takes over, and an operator revokes the session there.
    await cluster.failedOver(`baton:{${sid}}:session`, master, 60_000);
    // The CLI finds the Cluster afresh; until gossip has told every node of the new master it may
    // still be sent to the hung one: each try is bounded, and tried again.
    await until(
      async () => {
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [ADMIN, 'drop-session', sid],
          { env: { PATH: process.env.PATH ?? '', ...world.env }, timeout: 15_000 },
        ).catch(() => ({ stdout: '' }));
        return /"ok":\s*true/.test(stdout);
      },
      {
        deadlineMs: 90_000,
        what: 'the admin CLI to drop the session on the promoted master',
        intervalMs: 500,
      },
    );
    // While the old master hangs, the brokers still send that slot to it: 503, never the copy.
    expect((await statuses()).filter((status) => status === 200)).toEqual([]);

    // Once it is back, it learns it was replaced, the brokers follow the slot to the new master,
    // and the revoked session is refused everywhere.
    master.resume();
    await until(async () => (await statuses()).every((status) => status === 401), {
      deadlineMs: 60_000,
      what: 'every broker to refuse the revoked session',
      intervalMs: 100,
    });
  } finally {
    for (const server of cluster.servers) server.resume();
    await client.close();
  }
}, 240_000);
