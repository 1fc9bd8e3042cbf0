import { describe, expect, it } from 'vitest';
import { ADMIN_OUTBOX } from '../ops/events.ts';
import { eventShard, keys } from '../store/keys.ts';
import { adminWorld, OPERATOR } from './test-kit.ts';

describe('admin.action events', () => {
  it('go to the admin outbox, whose keys are the ones documented, scheduled on its shard', async () => {
    expect(keys.outbox(ADMIN_OUTBOX)).toBe(keys.adminOutbox);
    const world = adminWorld();
    await world.admin.sweepEvents(OPERATOR);
    const [action] = await world.adminOutbox();
    expect(action).toMatchObject({ type: 'admin.action' });
    expect(action?.payload.data).toEqual({
      actor: { name: 'alice', role: 'operator' },
      action: 'sweep_events',
      target: { outboxes: 0 },
    });
    const due = keys.eventsDue(eventShard(ADMIN_OUTBOX));
    expect(await world.store.scheduleDue(due, Infinity, 10)).toEqual([ADMIN_OUTBOX]);
  });

  it('are not recorded when events are off', async () => {
    const world = adminWorld({ events: false });
    expect(await world.admin.sweepEvents(OPERATOR)).toEqual({ ok: true, outboxes: 0 });
    expect(await world.adminOutbox()).toEqual([]);
  });
});
