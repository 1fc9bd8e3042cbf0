import { describe, expect, it } from 'vitest';
import { createRefreshOutcomes } from '../connections/refresh/outcomes.ts';
import { adminWorld, OPERATOR, START } from './test-kit.ts';

const LICENCE = 'https://api.example/licenses/1001';

describe('overview', () => {
  it('says the build, the store, connections by status and key id, and what events wait', async () => {
    const world = adminWorld();
    await world.session([LICENCE, `${LICENCE}/2`]);
    await world.session([LICENCE]);
    await world.admin.disconnect('c1', OPERATOR);
    expect(await world.admin.overview()).toEqual({
      build: { version: '9.9.9', revision: 'abc123' },
      dataFormat: 1,
      redis: { topology: 'embedded', masters: [] },
      // The embedded store is walked: a walk of memory is quick.
      sessions: 2,
      connections: {
        byStatus: { connected: 2, disconnected: 1 },
        byKeyId: { k1: 3 },
        activeKeyId: 'k1',
      },
      // Counted now: no census needed.
      census: { takenAt: new Date(START).toISOString(), state: 'idle' },
      refreshes: { refreshed: 0, rejected: 0, transient: 0, lost: 0 },
      events: {
        enabled: true,
        // The disconnection, and the operator's action.
        waiting: 2,
        sessionsDue: 2,
        deadLetters: 0,
        deadLettersByReason: {},
      },
    });
  });

  it('sums the refresh outcomes of the last hour, across instances', async () => {
    const world = adminWorld({ events: false });
    const one = createRefreshOutcomes({ store: world.store, now: world.now });
    const another = createRefreshOutcomes({ store: world.store, now: world.now });
    await one.count('refreshed');
    await one.count('transient');
    world.advance(30 * 60_000);
    await another.count('refreshed');
    await another.count('rejected');
    await another.count('lost');
    expect((await world.admin.overview()).refreshes).toEqual({
      refreshed: 2,
      rejected: 1,
      transient: 1,
      lost: 1,
    });
    // An hour after the first two, only the later ones count.
    world.advance(30 * 60_000);
    expect((await world.admin.overview()).refreshes).toEqual({
      refreshed: 1,
      rejected: 1,
      transient: 0,
      lost: 1,
    });
    expect((await world.admin.overview()).events.enabled).toBe(false);
  });
});

describe('sweepEvents', () => {
  it('schedules every outbox, and records the action', async () => {
    const world = adminWorld();
    await world.session([LICENCE]);
    await world.admin.disconnect('c0', OPERATOR);
    const swept = await world.admin.sweepEvents(OPERATOR);
    // The session's and the admin outbox.
    expect(swept).toEqual({ ok: true, outboxes: 2 });
    expect((await world.adminOutbox()).at(-1)?.payload).toMatchObject({
      data: { action: 'sweep_events', target: { outboxes: 2 } },
    });
  });
});
