import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { callApi, Client, connectVia } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import { BrokerProcess } from '../support/process.ts';
import { useWorld } from '../support/world.ts';
import { until } from '../support/wait.ts';
import { createClient } from 'redis';

/** The operator CLI (server/src/admin.ts) against the Redis of a running broker. */
const ADMIN = fileURLToPath(new URL('../../server/src/admin.ts', import.meta.url));
const PUBLIC_URL = 'http://baton.admin.test';
const A = `a:${randomBytes(32).toString('base64')}`;
const B = `b:${randomBytes(32).toString('base64')}`;

const world = useWorld({ brokers: { processes: 0 }, publicUrl: PUBLIC_URL });
const env = (keys: string) => world.freshEnv({ TOKEN_ENCRYPTION_KEYS: keys });

/** Variables of the brokers' environment beyond the keys (the events' webhook). */
let extra: Record<string, string> = {};

async function admin(
  keys: string,
  ...args: string[]
): Promise<{ code: number; out: Record<string, unknown> }> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [ADMIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env(keys), ...extra },
    });
    return { code: 0, out: JSON.parse(stdout) as Record<string, unknown> };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, out: JSON.parse(failed.stdout || '{}') as Record<string, unknown> };
  }
}

describe('admin', () => {
  it('counts, re-encrypts under the active key so the old one can go, and drops a session', async () => {
    const first = await BrokerProcess.start(env(A));
    const client = new Client({ publicUrl: PUBLIC_URL, instances: [first.url] });
    const control = world.sandbox.sandbox.control;
    control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
    const kept = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
    control.setConsent({ mode: 'approve', licenseId: 'lic-2001' });
    const revoked = await connectVia(
      new Client({ publicUrl: PUBLIC_URL, instances: [first.url] }),
      {
        start: 0,
        callback: 0,
        redeem: 0,
      },
    );
    control.revokeGrant('lic-2001');
    control.expireAccessTokens('lic-2001');
    expect((await callApi(client, 0, revoked)).status).toBe(401);
    await first.stop();

    expect(await admin(A, 'stats')).toMatchObject({
      code: 0,
      out: {
        sessions: 2,
        connections: {
          byStatus: { connected: 1, disconnected: 1 },
          byKeyId: { a: 2 },
          activeKeyId: 'a',
        },
      },
    });

    // Rotation: B first (active), A still there to read; re-encrypt; then A alone is gone.
    expect(await admin(B, 'reencrypt')).toMatchObject({
      code: 1,
      out: { ok: false, state: 'done', resealed: 0, missingKey: { a: 2 } },
    });
    expect(await admin(`${B},${A}`, 'reencrypt')).toMatchObject({
      code: 0,
      out: { ok: true, state: 'done', resealed: 2, alreadyCurrent: 0 },
    });
    expect((await admin(B, 'stats')).out).toMatchObject({ connections: { byKeyId: { b: 2 } } });
    await using second = await BrokerProcess.start(env(B));
    const again = new Client({ publicUrl: PUBLIC_URL, instances: [second.url] });
    expect((await callApi(again, 0, kept)).status).toBe(200);

    expect(await admin(B, 'drop-session', '--connection', kept.id)).toMatchObject({
      code: 0,
      out: { ok: true, count: 1 },
    });
    expect((await callApi(again, 0, kept)).status).toBe(401);
    expect((await admin(B, 'stats')).out).toMatchObject({
      sessions: 1,
      connections: { byStatus: { connected: 0, disconnected: 1 } },
    });
    expect(await admin(B, 'drop-session', '--connection', 'nope')).toMatchObject({ code: 1 });
    expect((await admin(B, 'frobnicate')).code).toBe(2);
    await client.close();
    await again.close();
  });

  it('events: what waits for delivery; a dropped session is reported as revoked', async () => {
    // A receiver that is down: nothing listens on its port.
    extra = {
      EVENTS_WEBHOOK_URL: `http://127.0.0.1:${await freePort()}/hooks`,
      EVENTS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    };
    try {
      const broker = await BrokerProcess.start(
        world.freshEnv({ TOKEN_ENCRYPTION_KEYS: A, ...extra }),
      );
      const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });
      world.sandbox.sandbox.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      const session = await connectVia(client, { start: 0, callback: 0, redeem: 0 });
      await until(() => broker.lines.some((line) => line.includes('trying again later')), {
        what: 'a failed delivery',
      });
      await broker.stop();

      expect(await admin(A, 'events')).toMatchObject({
        code: 0,
        out: { sessionsDue: 1, deadLetters: 0, newestDeadLetters: [] },
      });
      expect(await admin(A, 'drop-session', '--connection', session.id)).toMatchObject({ code: 0 });
      const redis = createClient({ url: world.redis.url });
      await redis.connect();
      const typesIn = async (outbox: string) =>
        (await redis.lRange(outbox, 0, -1)).map(
          (entry) => (JSON.parse(entry) as { type: string }).type,
        );
      // The session's outbox, and the admin outbox with the operator's action (`cli:<user>`).
      const [outbox] = (await redis.keys('baton:{*}:outbox')).filter(
        (key) => key !== 'baton:{admin}:outbox',
      );
      expect(await typesIn(outbox!)).toEqual(['connection.created', 'session.ended']);
      expect(await typesIn('baton:{admin}:outbox')).toEqual(['admin.action']);
      await redis.close();
      await client.close();
    } finally {
      extra = {};
    }
  });
});
