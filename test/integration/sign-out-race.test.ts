import { routes } from '@baton/shared';
import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { authorize, call, connect, redeem } from '../support/flow.ts';
import { dumpRedis } from '../support/leaks.ts';
import { useWorld } from '../support/world.ts';

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

it('a join that races a sign-out leaves nothing behind under the ended session', async () => {
  const { session_token: token } = await connect(world);
  const sid = createHash('sha256').update(token).digest('base64url');
  const second = world.sandbox.sandbox.accounts[0]!.licenses[1]!.id;
  const { result, verifier } = await authorize(world, { licenseId: second });

  // Hold the join's first record write until the sign-out has finished.
  const store = world.broker.store;
  const write = store.setVersioned.bind(store);
  let reached!: () => void;
  const atWrite = new Promise<void>((resolve) => (reached = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  store.setVersioned = async (...args) => {
    store.setVersioned = write;
    reached();
    await released;
    return write(...args);
  };

  const join = redeem(world, result.searchParams.get('handoff')!, verifier, token);
  await atWrite;
  expect((await call(world, routes.session, token, { method: 'DELETE' })).status).toBe(204);
  release();

  expect((await join).status).toBe(401);
  expect((await dumpRedis(world.redis.url)).filter((line) => line.includes(sid))).toEqual([]);
});
