import { describe, expect, it } from 'vitest';
import { parseKeyring } from '../base/crypto.ts';
import { keys } from '../store/keys.ts';
import { createCensusJob } from './census-job.ts';
import { adminWorld, key, OPERATOR, START } from './test-kit.ts';

const K1 = key('k1', 1);
const K2 = key('k2', 2);
const LICENCES = ['https://api.example/a', 'https://api.example/b', 'https://api.example/c'];

/**
 * Three sessions: five records under k1 (one disconnected), one session without any, then one
 * record under k2; a census over them (`batch` keys at a time), with k2 active and k1 kept.
 */
async function counted(batch = 500, keyring = `${K2},${K1}`) {
  const world = adminWorld({ keyring: K1 });
  await world.session(LICENCES);
  await world.session(LICENCES.slice(0, 2), ['d0', 'd1']);
  await world.admin.disconnect('d1', OPERATOR);
  await world.sessions.create();
  const rotated = world.withKeys(parseKeyring(keyring));
  const { sid } = await world.sessions.create();
  await rotated.connections.save(
    sid,
    { id: 'e0', apiUrl: LICENCES[0] ?? '', status: 'connected', connectedAt: world.now() },
    0,
  );
  const job = (onBatch?: () => void) =>
    createCensusJob({
      store: world.store,
      redis: undefined,
      connections: rotated.connections,
      now: world.now,
      batch,
      ...(onBatch ? { onBatch } : {}),
    });
  return { world, job };
}

const ALL = {
  state: 'done',
  sessions: 4,
  connections: 6,
  byKeyId: { k1: 5, k2: 1 },
  byStatus: { connected: 5, disconnected: 1 },
  unreadable: 0,
  error: null,
};

describe('the census', () => {
  it('counts sessions, and records by key id and status, in the background; keeps the result', async () => {
    const { world, job } = await counted();
    const census = job();
    expect(await census.last()).toBeNull();
    expect(await census.start(OPERATOR)).toMatchObject({ state: 'running', startedBy: 'alice' });
    expect(await census.settled()).toMatchObject(ALL);
    expect(await census.last()).toEqual({
      sessions: 4,
      byKeyId: { k1: 5, k2: 1 },
      byStatus: { connected: 5, disconnected: 1 },
      startedAt: new Date(START).toISOString(),
      finishedAt: new Date(START).toISOString(),
    });
    // Kept for a week, then gone.
    world.advance(7 * 24 * 3600 * 1000 + 1);
    expect(await census.last()).toBeNull();
  });

  it('counts records it cannot open by key id, as unreadable', async () => {
    const { job } = await counted(500, K2);
    const census = job();
    await census.start(OPERATOR);
    expect(await census.settled()).toMatchObject({
      connections: 6,
      byKeyId: { k1: 5, k2: 1 },
      byStatus: { connected: 1, disconnected: 0 },
      unreadable: 5,
    });
  });

  it('pauses between batches when stopped, and another instance resumes from its cursor', async () => {
    const { job } = await counted(2);
    let first: ReturnType<typeof job> | undefined = undefined;
    first = job(() => void first?.stop());
    await first.start(OPERATOR);
    const paused = await first.settled();
    expect(paused?.state).toBe('paused');
    expect(await first.last()).toBeNull();
    const second = job();
    expect((await second.state()).state).toBe('paused');
    expect(await second.start({ name: 'bob', role: 'operator' })).toMatchObject({
      state: 'running',
      startedBy: 'alice',
    });
    // Resumed, not begun again: every key counted once.
    expect(await second.settled()).toMatchObject(ALL);
  });

  it('runs on one instance at a time: a start while another holds it changes nothing', async () => {
    const { world, job } = await counted();
    await world.store.set(keys.adminJobLease('census'), 'another', 60_000);
    const census = job();
    expect(await census.start(OPERATOR)).toMatchObject({ state: 'idle' });
    expect(census.settled()).toBeNull();
  });

  it('starts afresh once done, counting what is there now', async () => {
    const { world, job } = await counted();
    const census = job();
    await census.start(OPERATOR);
    await census.settled();
    await world.sessions.create();
    await census.start(OPERATOR);
    expect(await census.settled()).toMatchObject({ ...ALL, sessions: 5 });
  });
});

describe('the overview and the census', () => {
  it('starts a census as an admin.action, and stops it with the use cases', async () => {
    const world = adminWorld();
    await world.session(LICENCES);
    expect(await world.admin.startCensus(OPERATOR)).toMatchObject({ state: 'running' });
    await world.admin.stop();
    expect((await world.admin.overview()).census.state).toMatch(/^(paused|done)$/);
    expect((await world.adminOutbox()).at(-1)?.payload).toMatchObject({
      type: 'admin.action',
      data: { action: 'start_census' },
    });
  });
});
