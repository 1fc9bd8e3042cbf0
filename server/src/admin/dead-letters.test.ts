import { describe, expect, it } from 'vitest';
import { createOutboxHeads } from '../ops/outbox-heads.ts';
import { ADMIN_OUTBOX, sessionRef, type OutboxEntry } from '../ops/events.ts';
import { DEFAULT_EVENT_LIMITS } from '../base/defaults.ts';
import { eventShard, keys } from '../store/keys.ts';
import { adminWorld, OPERATOR, START } from './test-kit.ts';

const LICENCE = 'https://api.example/licenses/1001';
const silent = { error: () => {} } as unknown as Parameters<typeof createOutboxHeads>[0]['log'];

/** A world whose sessions' head events were given up on (`reason`), as the delivery does. */
async function withDeadLetters(reasons: ('expired' | 'outbox_full')[]) {
  const world = adminWorld();
  const counters = {
    delivered: 0,
    failedAttempts: 0,
    deadLettered: { expired: 0, outbox_full: 0, backlog_full: 0 },
    deadLettersDropped: 0,
  };
  const heads = createOutboxHeads({
    store: world.store,
    now: world.now,
    log: silent,
    limits: DEFAULT_EVENT_LIMITS,
    counters,
  });
  const letters: { sid: string; id: string }[] = [];
  for (const reason of reasons) {
    const sid = await world.session([LICENCE]);
    await world.admin.disconnect('c0', OPERATOR);
    const [head] = await world.store.listRange(keys.outbox(sid), 0, 0);
    await heads.deadLetter(sid, head!, reason, 'status 500');
    letters.push({ sid, id: (JSON.parse(head!) as OutboxEntry).id });
    world.advance(1000);
  }
  return { world, letters };
}

describe('dead letters', () => {
  it('lists them newest first, with a reason filter and a limit', async () => {
    const { world, letters } = await withDeadLetters(['expired', 'outbox_full', 'expired']);
    const all = await world.admin.deadLetters({ limit: 10 });
    expect(all.map(({ id }) => id)).toEqual(letters.map(({ id }) => id).reverse());
    expect(all[0]).toEqual({
      id: letters[2]!.id,
      type: 'connection.disconnected',
      sessionRef: sessionRef(letters[2]!.sid),
      reason: 'expired',
      attempts: 0,
      recordedAt: new Date(START + 2000).toISOString(),
      deadAt: new Date(START + 2000).toISOString(),
      lastOutcome: 'status 500',
    });
    const expired = await world.admin.deadLetters({ limit: 10, reason: 'expired' });
    expect(expired.map(({ id }) => id)).toEqual([letters[2]!.id, letters[0]!.id]);
    expect(await world.admin.deadLetters({ limit: 1 })).toHaveLength(1);
    await expect(world.admin.deadLetters({ limit: 1, reason: 'bored' })).rejects.toThrow(
      /reason is one of/,
    );
  });

  it('redelivers one through the admin outbox, with its id, body and session', async () => {
    const { world, letters } = await withDeadLetters(['expired', 'expired']);
    const { id, sid } = letters[0]!;
    world.advance(60_000);
    expect(await world.admin.redeliver(id, OPERATOR)).toEqual({ ok: true, count: 1 });
    expect((await world.admin.deadLetters({ limit: 10 })).map((each) => each.id)).toEqual([
      letters[1]!.id,
    ]);
    const [again, action] = (await world.adminOutbox()).slice(-2);
    expect(again).toMatchObject({
      id,
      type: 'connection.disconnected',
      session_ref: sessionRef(sid),
    });
    expect(again?.at).toBe(world.now());
    expect(again?.payload).toMatchObject({ data: { session: { ref: sessionRef(sid) } } });
    expect(action?.payload).toMatchObject({
      data: { action: 'redeliver', target: { event: id } },
    });
    // Scheduled, and counted among the events waiting.
    const due = keys.eventsDue(eventShard(ADMIN_OUTBOX));
    // (With any session of the same shard's.)
    expect(await world.store.scheduleDue(due, Infinity, 10)).toContain(ADMIN_OUTBOX);
    expect((await world.admin.overview()).events.waiting).toBeGreaterThanOrEqual(2);
    expect(await world.admin.redeliver(id, OPERATOR)).toMatchObject({ error: 'not_found' });
  });

  it('discards one, and counts them by reason in the overview', async () => {
    const { world, letters } = await withDeadLetters(['expired', 'outbox_full']);
    expect((await world.admin.overview()).events).toMatchObject({
      deadLetters: 2,
      deadLettersByReason: { expired: 1, outbox_full: 1 },
    });
    expect(await world.admin.discard(letters[0]!.id, OPERATOR)).toEqual({ ok: true, count: 1 });
    expect((await world.admin.overview()).events).toMatchObject({
      deadLetters: 1,
      deadLettersByReason: { outbox_full: 1 },
    });
    await expect(world.admin.discard('msg_bad', OPERATOR)).rejects.toThrow(/event id/);
  });
});
