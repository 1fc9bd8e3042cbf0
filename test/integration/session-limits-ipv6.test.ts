import { routes } from '@baton/shared';
import { request } from 'node:http';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { connect } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

/**
 * IPv6 clients behind a proxy the broker trusts: one client holds a whole prefix (a /64 at the
 * least, often a /56), so the failed-session limit counts by prefix, not by address.
 */
const world = useWorld(
  {
    env: { SESSION_FAILURE_LIMIT: '30', TRUST_PROXY: 'loopback' },
  },
  { resetSandbox: true, expectNoLeaks: true },
);

/** A GET as the trusted proxy forwards it for client `from`. */
function get(path: string, token: string, from: string) {
  const { port } = new URL(world.broker.url);
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': from },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function redisCommands(): Promise<number> {
  const client = createClient({ url: world.redis.url });
  await client.connect();
  try {
    return Number(/total_commands_processed:(\d+)/.exec(await client.info('stats'))?.[1]);
  } finally {
    await client.close();
  }
}

const randomToken = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
const hex = () => Math.floor(Math.random() * 0x10000).toString(16);

describe('failed session checks from IPv6 clients', () => {
  it('300 unknown tokens from 300 addresses of one /64 are limited as one client', async () => {
    const { session_token: token, connection } = await connect(world);
    const path = routes.proxy(connection.id, 'users.me');
    const before = await redisCommands();
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++)
      statuses.push(await get(path, randomToken(), `2001:db8:1:2:${hex()}:${hex()}:${hex()}:${i}`));
    const used = (await redisCommands()) - before - 1; // less this test's own INFO
    // Each of the 30 the limit lets through is one round trip of two GETEX: the session, and the
    // record its call names (store/redis/reads.ts, readUntracked).
    expect(used).toBeLessThan(70);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(250);
    // Another address of the same /56 is the same client; another /56 is not.
    expect(await get(path, token, '2001:db8:1:ff::1')).toBe(429);
    expect(await get(path, token, '2001:db8:1:100::1')).toBe(200);
    // An IPv4 client is keyed by its own address.
    expect(await get(path, token, '203.0.113.9')).toBe(200);
  });
});
