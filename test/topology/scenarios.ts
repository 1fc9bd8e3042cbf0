import { connectionsResponseSchema, routes } from '@baton/shared';
import { expect, it } from 'vitest';
import { callApi, connectVia, type Client, type Connected } from '../support/client.ts';
import type { World } from '../support/world.ts';

const LICENSE = 'lic-1001';

/** Status of every proxied call of `session` on each instance, in order. */
async function callEach(client: Client, session: Connected): Promise<number[]> {
  const statuses: number[] = [];
  for (const via of [0, 1, 2]) {
    const response = await callApi(client, via, session);
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

/** The connection's status as instance `via` lists it, or the list's HTTP status. */
export async function listed(client: Client, via: number, session: Connected): Promise<string> {
  const response = await client.fetch(routes.connections, {
    via,
    headers: { authorization: `Bearer ${session.token}` },
  });
  if (response.status !== 200) return `GET /connections answered ${response.status}`;
  const { connections } = connectionsResponseSchema.parse(await response.json());
  return connections.find((connection) => connection.id === session.id)?.status ?? 'missing';
}

/** What must hold on every Redis topology, with three broker processes sharing it. */
export function topologyScenarios<R>(world: World<R>): void {
  it('the whole flow across instances: start on one, callback on another, redeem on a third, calls on each', async () => {
    const client = world.client();
    try {
      world.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      const session = await connectVia(client, { start: 0, callback: 1, redeem: 2 });
      expect(await callEach(client, session)).toEqual([200, 200, 200]);
      const response = await callApi(client, 1, session);
      expect(((await response.json()) as { license?: { id?: string } }).license?.id).toBe(LICENSE);
      for (const via of [0, 1, 2]) expect(await listed(client, via, session)).toBe('connected');
    } finally {
      await client.close();
    }
  });

  it('a disconnect and a sign-out on one instance take effect on every other at once, cached or not', async () => {
    const client = world.client();
    try {
      world.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      const disconnected = await connectVia(client);
      const signedOut = await connectVia(client);
      // Every instance has read both sessions and their connections: they are in its cache.
      expect(await callEach(client, disconnected)).toEqual([200, 200, 200]);
      expect(await callEach(client, signedOut)).toEqual([200, 200, 200]);

      const removed = await client.fetch(routes.connection(disconnected.id), {
        via: 0,
        method: 'DELETE',
        headers: { authorization: `Bearer ${disconnected.token}` },
      });
      expect(removed.status).toBe(204);
      expect(await callEach(client, disconnected)).toEqual([404, 404, 404]);

      const out = await client.fetch(routes.session, {
        via: 1,
        method: 'DELETE',
        headers: { authorization: `Bearer ${signedOut.token}` },
      });
      expect(out.status).toBe(204);
      expect(await callEach(client, signedOut)).toEqual([401, 401, 401]);
    } finally {
      await client.close();
    }
  });

  it('concurrent refresh: 40 calls through all three at each of 20 expiries, exactly one refresh each, no reuse', async () => {
    const ROTATIONS = 20;
    const CALLS = 40;
    const client = world.client();
    try {
      world.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      const session = await connectVia(client);
      const before = world.control.counters();
      const failures: string[] = [];
      for (let rotation = 0; rotation < ROTATIONS; rotation++) {
        world.control.expireAccessTokens(LICENSE);
        const statuses = await Promise.all(
          Array.from({ length: CALLS }, async (_, index) => {
            const response = await callApi(client, index, session);
            await response.arrayBuffer();
            return response.status;
          }),
        );
        statuses.forEach((status, index) => {
          if (status !== 200) failures.push(`rotation ${rotation}, call ${index}: ${status}`);
        });
      }
      expect(failures).toEqual([]);
      const after = world.control.counters();
      expect(after.refreshes - before.refreshes).toBe(ROTATIONS);
      expect(after.reuse_detected - before.reuse_detected).toBe(0);
      expect(after.token_errors - before.token_errors).toBe(0);
      expect(await listed(client, 2, session)).toBe('connected');
    } finally {
      await client.close();
    }
  });
}
