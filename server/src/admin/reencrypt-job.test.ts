import { describe, expect, it } from 'vitest';
import { parseKeyring } from '../base/crypto.ts';
import { keys } from '../store/keys.ts';
import { createReencryptJob } from './reencrypt-job.ts';
import { adminWorld, key, OPERATOR } from './test-kit.ts';

const K1 = key('k1', 1);
const K2 = key('k2', 2);
const LICENCES = ['https://api.example/a', 'https://api.example/b', 'https://api.example/c'];

/** Five records sealed under k1, and a job over them under `keyring` (`batch` keys at a time). */
async function rotated(keyring: string, batch = 500) {
  const world = adminWorld({ keyring: K1 });
  await world.session(LICENCES);
  await world.session(LICENCES.slice(0, 2));
  const { connections } = world.withKeys(parseKeyring(keyring));
  const job = (onBatch?: () => void) =>
    createReencryptJob({
      store: world.store,
      redis: undefined,
      keyring: parseKeyring(keyring),
      connections,
      now: world.now,
      batch,
      ...(onBatch ? { onBatch } : {}),
    });
  return { world, job };
}

describe('the re-encryption job', () => {
  it('seals every record again under the active key, in the background, then says done', async () => {
    const { world, job } = await rotated(`${K2},${K1}`);
    const runner = job();
    expect(await runner.state()).toMatchObject({ state: 'idle', seen: 0 });
    expect(await runner.start(OPERATOR)).toMatchObject({ state: 'running', startedBy: 'alice' });
    expect(await runner.settled()).toMatchObject({
      state: 'done',
      activeKeyId: 'k2',
      seen: 5,
      resealed: 5,
      alreadyCurrent: 0,
      missingKey: {},
      error: null,
    });
    expect((await runner.state()).state).toBe('done');
    const again = world.withKeys(parseKeyring(K2)).admin;
    expect((await again.overview()).connections.byKeyId).toEqual({ k2: 5 });
    // A second run starts afresh, and finds them current.
    await runner.start(OPERATOR);
    expect(await runner.settled()).toMatchObject({ seen: 5, resealed: 0, alreadyCurrent: 5 });
  });

  it('counts records under a key no longer configured, and leaves them', async () => {
    const { job } = await rotated(K2);
    const runner = job();
    await runner.start(OPERATOR);
    expect(await runner.settled()).toMatchObject({
      state: 'done',
      seen: 5,
      resealed: 0,
      missingKey: { k1: 5 },
    });
  });

  it('pauses between batches when stopped, and another instance resumes from its cursor', async () => {
    const { job } = await rotated(`${K2},${K1}`, 2);
    let first: ReturnType<typeof job> | undefined = undefined;
    first = job(() => void first?.stop());
    await first.start(OPERATOR);
    const paused = await first.settled();
    expect(paused).toMatchObject({ state: 'paused', seen: 2, resealed: 2 });
    const second = job();
    expect((await second.state()).state).toBe('paused');
    expect(await second.start({ name: 'bob', role: 'operator' })).toMatchObject({
      state: 'running',
      // Resumed: the run is still the first one's.
      startedBy: 'alice',
      seen: 2,
    });
    expect(await second.settled()).toMatchObject({ state: 'done', seen: 5, resealed: 5 });
  });

  it('runs on one instance at a time: a start while another holds it changes nothing', async () => {
    const { world, job } = await rotated(`${K2},${K1}`);
    await world.store.set(keys.adminJobLease('reencrypt'), 'another', 60_000);
    const runner = job();
    expect(await runner.start(OPERATOR)).toMatchObject({ state: 'idle' });
    expect(runner.settled()).toBeNull();
  });

  it('a run left by an instance that died shows paused, and resumes', async () => {
    const { world, job } = await rotated(`${K2},${K1}`, 2);
    const died = { ...(await job().state()), state: 'running', cursors: { embedded: '2' } };
    await world.store.set(keys.adminJob('reencrypt'), JSON.stringify(died), 60_000);
    const runner = job();
    expect((await runner.state()).state).toBe('paused');
    await runner.start(OPERATOR);
    // The first two were left to the instance that died: three remain from its cursor.
    expect(await runner.settled()).toMatchObject({ state: 'done', seen: 3 });
  });
});
