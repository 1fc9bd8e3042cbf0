import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, connectVia, type Connected } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import {
  redisCluster,
  redisSentinel,
  useWorld,
  type RedisTopology,
  type World,
} from '../support/world.ts';
import { PUBLIC_URL } from './topology.ts';

/**
 * The admin API's main operations on Sentinel and on Cluster: the overview with each master's
 * health, connections found by licence, a disconnection, a session ended. One broker process per
 * topology, with ADMIN_PORT, on a real Redis of that kind.
 */
const OPERATOR = `batadm_${randomBytes(32).toString('base64url')}`;

type View = { id: string; sessionRef: string; licence: string; status: string };
type Overview = {
  redis: { topology: string; masters: { address: string; up: boolean }[] };
  connections: { byStatus: { connected: number; disconnected: number } };
};

function adminOperations<R>(
  name: string,
  topology: RedisTopology<R>,
  expected: { topology: string; masters: number },
): void {
  describe(`the admin API on ${name}`, () => {
    const world: World<R> = useWorld({
      brokers: { processes: 0 },
      redis: topology,
      publicUrl: PUBLIC_URL,
    });
    let adminUrl = '';
    let folder = '';
    const sessions: Connected[] = [];

    const admin = async (path: string, method = 'GET', body?: unknown): Promise<unknown> => {
      const response = await fetch(`${adminUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${OPERATOR}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}`).toBe(200);
      return response.json();
    };
    const find = async (query: string) =>
      ((await admin(`/api/v1/connections?${query}`)) as { connections: View[] }).connections;

    beforeAll(async () => {
      folder = await mkdtemp(join(tmpdir(), 'baton-admin-topology-'));
      const tokensFile = join(folder, 'tokens.json');
      const sha256 = createHash('sha256').update(OPERATOR).digest('hex');
      await writeFile(tokensFile, JSON.stringify([{ name: 'olivia', role: 'operator', sha256 }]));
      const port = await freePort();
      await world.startProcess({ ADMIN_PORT: String(port), ADMIN_TOKENS_FILE: tokensFile });
      adminUrl = `http://127.0.0.1:${port}`;
      const client = world.client();
      for (const licenseId of ['lic-1001', 'lic-1002', 'lic-1001']) {
        world.control.setConsent({ mode: 'approve', licenseId });
        sessions.push(await connectVia(client, { start: 0, callback: 0, redeem: 0 }));
      }
    });
    afterAll(async () => {
      if (folder) await rm(folder, { recursive: true, force: true });
    });

    it('answers the overview with each master up', async () => {
      const overview = (await admin('/api/v1/overview')) as Overview;
      expect(overview.redis.topology).toBe(expected.topology);
      expect(overview.redis.masters).toHaveLength(expected.masters);
      for (const master of overview.redis.masters) {
        expect(master.up, master.address).toBe(true);
        expect(master.address).toMatch(/^[^@/]+:\d+$/);
      }
      expect(overview.connections.byStatus).toEqual({ connected: 3, disconnected: 0 });
    });

    it('finds the connections of a licence, in every session that holds it', async () => {
      const [first] = await find(`connection=${sessions[0]!.id}`);
      const byLicence = await find(`licence=${encodeURIComponent(first!.licence)}`);
      expect(byLicence.map((view) => view.id).sort()).toEqual(
        [sessions[0]!.id, sessions[2]!.id].sort(),
      );
    });

    it('disconnects a connection and ends a session', async () => {
      const [session, other] = sessions;
      expect(await admin(`/api/v1/connections/${session!.id}/disconnect`, 'POST')).toEqual({
        ok: true,
        count: 1,
      });
      expect((await find(`connection=${session!.id}`))[0]?.status).toBe('disconnected');

      const [view] = await find(`connection=${other!.id}`);
      expect(await admin(`/api/v1/sessions/${view!.sessionRef}/end`, 'POST')).toEqual({
        ok: true,
        count: 1,
      });
      expect(await find(`session=${view!.sessionRef}`)).toEqual([]);
      expect((await callApi(world.client(), 0, other!)).status).toBe(401);
      const overview = (await admin('/api/v1/overview')) as Overview;
      expect(overview.connections.byStatus).toEqual({ connected: 1, disconnected: 1 });
    });
  });
}

adminOperations('Sentinel', redisSentinel(), { topology: 'sentinel', masters: 1 });
adminOperations('Cluster', redisCluster({ masters: 3 }), { topology: 'cluster', masters: 3 });
