import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { request } from 'node:http';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { connect } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

const world = useWorld(
  {
    env: { SESSION_FAILURE_LIMIT: '30', SESSION_RATE_LIMIT: '5' },
  },
  { resetSandbox: true, expectNoLeaks: true },
);

/** A GET to the broker from `from` (any 127.0.0.0/8 address is this machine). */
function get(path: string, token: string, from = '127.0.0.1') {
  const { port } = new URL(world.broker.url);
  return new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        localAddress: from,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
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
    const info = await client.info('stats');
    return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]);
  } finally {
    await client.close();
  }
}

const randomToken = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');

describe('failed session checks from one address', () => {
  it('are limited in process: 400 unknown tokens reach Redis fewer than 150 times', async () => {
    const { session_token: token, connection } = await connect(world);
    const before = await redisCommands();
    const statuses: number[] = [];
    for (let i = 0; i < 400; i++)
      statuses.push(
        (await get(routes.proxy(connection.id, 'users.me'), randomToken(), '127.0.0.3')).status,
      );
    const used = (await redisCommands()) - before - 1; // less this test's own INFO
    expect(used).toBeLessThan(150);
    expect(statuses.filter((status) => status === 401).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(300);

    const limited = await get(routes.connections, randomToken(), '127.0.0.3');
    expect(limited.status).toBe(429);
    expect(limited.headers[BROKER_ERROR_HEADER.toLowerCase()]).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    // Another address, with a real session, is unaffected.
    expect((await get(routes.proxy(connection.id, 'users.me'), token, '127.0.0.4')).status).toBe(
      200,
    );
    // And the limited address recovers as time passes.
    world.clock.advance(60_000);
    expect((await get(routes.proxy(connection.id, 'users.me'), token, '127.0.0.3')).status).toBe(
      200,
    );
  });
});

describe('API calls of one session', () => {
  it('are limited per session with 429 and Retry-After, other sessions unaffected', async () => {
    const one = await connect(world);
    const other = await connect(world);
    const path = routes.proxy(one.connection.id, 'users.me');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await get(path, one.session_token, '127.0.0.5')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await get(path, one.session_token, '127.0.0.5');
    expect(limited.headers[BROKER_ERROR_HEADER.toLowerCase()]).toBe('rate_limited');
    expect(limited.headers['retry-after']).toBe('12');
    const otherPath = routes.proxy(other.connection.id, 'users.me');
    expect((await get(otherPath, other.session_token, '127.0.0.5')).status).toBe(200);
    world.clock.advance(12_000);
    expect((await get(path, one.session_token, '127.0.0.5')).status).toBe(200);
  });
});
