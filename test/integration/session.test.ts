import { connectionsResponseSchema, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { authorize, call, connect, redeem } from '../support/flow.ts';
import { dumpRedis } from '../support/leaks.ts';
import { useWorld } from '../support/world.ts';

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

async function handoff(licenseId?: string) {
  const { result, verifier } = await authorize(world, licenseId ? { licenseId } : {});
  return { handoff: result.searchParams.get('handoff')!, verifier };
}
const errorOf = async (response: Response) => ((await response.json()) as { error: string }).error;

describe('POST /session', () => {
  it('redeems a handoff for a session token and a connection, and keeps only its hash', async () => {
    const { handoff: code, verifier } = await handoff();
    const response = await redeem(world, code, verifier);
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as { session_token: string; connection: { id: string } };
    expect(body.session_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.connection).toMatchObject({
      status: 'connected',
      api_origin: world.sandbox.url,
    });
    const values = await dumpRedis(world.redis.url);
    expect(values.some((value) => value.includes(body.session_token))).toBe(false);
  });

  it('refuses a replayed handoff', async () => {
    const { handoff: code, verifier } = await handoff();
    expect((await redeem(world, code, verifier)).status).toBe(201);
    const replay = await redeem(world, code, verifier);
    expect(replay.status).toBe(400);
    expect(await errorOf(replay)).toBe('invalid_grant');
  });

  it('burns the handoff on a wrong verifier, so the right one fails afterwards', async () => {
    const { handoff: code, verifier } = await handoff();
    const wrong = await redeem(world, code, 'w'.repeat(43));
    expect(await errorOf(wrong)).toBe('invalid_grant');
    expect((await redeem(world, code, verifier)).status).toBe(400);
  });

  it('refuses a handoff redeemed 60 s after it was issued', async () => {
    const { handoff: code, verifier } = await handoff();
    world.clock.advance(60_000);
    expect(await errorOf(await redeem(world, code, verifier))).toBe('invalid_grant');
  });

  it('accepts a handoff redeemed 59 s after it was issued', async () => {
    const { handoff: code, verifier } = await handoff();
    world.clock.advance(59_000);
    expect((await redeem(world, code, verifier)).status).toBe(201);
  });

  it('answers invalid_request to a malformed body', async () => {
    const response = await fetch(new URL(routes.session, world.broker.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"handoff": 1}',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'invalid_request',
      message: expect.any(String),
    });
  });

  it('joins an existing session with its bearer token, and lists both licenses', async () => {
    const [first, second] = world.sandbox.sandbox.accounts.flatMap((account) =>
      account.licenses.map((license) => license.id),
    );
    const one = await connect(world, { licenseId: first! });
    world.clock.advance(1000);
    const two = await connect(world, { licenseId: second!, sessionToken: one.session_token });
    expect(two.session_token).toBe(one.session_token);
    expect(two.connection.id).not.toBe(one.connection.id);
    const list = connectionsResponseSchema.parse(
      await (await call(world, routes.connections, one.session_token)).json(),
    );
    expect(list.connections.map((connection) => connection.id)).toEqual([
      one.connection.id,
      two.connection.id,
    ]);
  });

  it('reconnecting a license already in the session replaces it in place, keeping its id', async () => {
    const one = await connect(world);
    const again = await connect(world, { sessionToken: one.session_token });
    expect(again.connection.id).toBe(one.connection.id);
    const list = connectionsResponseSchema.parse(
      await (await call(world, routes.connections, one.session_token)).json(),
    );
    expect(list.connections).toHaveLength(1);
  });
});

describe('GET /connections', () => {
  it('answers 401 invalid_session without a valid bearer token', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: 'Basic x' }]) {
      const response = await fetch(new URL(routes.connections, world.broker.url), { headers });
      expect(response.status).toBe(401);
      expect(await errorOf(response)).toBe('invalid_session');
    }
  });

  it('never shows a token', async () => {
    const one = await connect(world);
    const text = await (await call(world, routes.connections, one.session_token)).text();
    for (const secret of world.sandbox.sandbox.control.secrets())
      expect(text).not.toContain(secret);
  });
});

describe('DELETE /connections/:id and DELETE /session', () => {
  it('removes one connection, then the whole session, leaving no key of it in Redis', async () => {
    const [first, second] = world.sandbox.sandbox.accounts.flatMap((account) =>
      account.licenses.map((license) => license.id),
    );
    const one = await connect(world, { licenseId: first! });
    await connect(world, { licenseId: second!, sessionToken: one.session_token });
    const removed = await call(world, routes.connection(one.connection.id), one.session_token, {
      method: 'DELETE',
    });
    expect(removed.status).toBe(204);
    const list = connectionsResponseSchema.parse(
      await (await call(world, routes.connections, one.session_token)).json(),
    );
    expect(list.connections).toHaveLength(1);

    const missing = await call(world, routes.connection('nope'), one.session_token, {
      method: 'DELETE',
    });
    expect(missing.status).toBe(404);

    const signedOut = await call(world, routes.session, one.session_token, { method: 'DELETE' });
    expect(signedOut.status).toBe(204);
    expect((await call(world, routes.connections, one.session_token)).status).toBe(401);
    const sid = (await import('node:crypto'))
      .createHash('sha256')
      .update(one.session_token)
      .digest('base64url');
    const keys = await dumpRedis(world.redis.url);
    expect(keys.filter((line) => line.includes(sid))).toEqual([]);
  });
});

describe('health', () => {
  it('GET /healthz and /readyz answer while Redis is up, and /readyz 503 when it is down', async () => {
    expect((await fetch(new URL(routes.healthz, world.broker.url))).status).toBe(200);
    expect((await fetch(new URL(routes.readyz, world.broker.url))).status).toBe(200);
    await world.redis.stop();
    try {
      expect((await fetch(new URL(routes.readyz, world.broker.url))).status).toBe(503);
      expect((await fetch(new URL(routes.healthz, world.broker.url))).status).toBe(200);
    } finally {
      await world.redis.start();
    }
  });
});
