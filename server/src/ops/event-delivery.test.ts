import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EVENT_SHARDS, eventShard, keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import { createDelivery } from './event-delivery.ts';
import type { BrokerEvent } from '../connections/events.ts';
import { DEFAULT_EVENT_LIMITS } from '../base/defaults.ts';
import {
  ADMIN_OUTBOX,
  createOutbox,
  parseWebhookSecret,
  RECORDING_MS,
  type EventLimits,
} from './events.ts';

/**
 * The delivery on the embedded store and an injected clock, against a receiver that verifies
 * with the `standardwebhooks` package: a verifier written by no one here.
 */
const T0 = Date.UTC(2026, 10, 1, 9, 0);
const HOUR = 3600 * 1000;
const OLD = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const NEW = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;

interface Request {
  headers: Record<string, string>;
  body: string;
  at: number;
}

const SHARDS = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);

function world(
  options: {
    secrets?: string[];
    instances?: number;
    limits?: Partial<EventLimits>;
    recordingMs?: number;
  } = {},
) {
  const limits = { ...DEFAULT_EVENT_LIMITS, ...options.limits };
  let now = T0;
  const clock = () => now;
  const store = createMemoryStore(clock);
  const requests: Request[] = [];
  /** What the receiver answers next: a status, or a status with headers; default 204. */
  let answer: (request: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 204 });
  const fetch: typeof globalThis.fetch = async (_url, init) => {
    const request = {
      headers: init?.headers as Record<string, string>,
      body: String(init?.body),
      at: now,
    };
    requests.push(request);
    return answer(request);
  };
  const secrets = (options.secrets ?? [OLD]).map((s) => parseWebhookSecret(s) as Buffer);
  const deliveries = Array.from({ length: options.instances ?? 1 }, () =>
    createDelivery({
      store,
      url: 'https://receiver.example/hooks',
      secrets,
      fetch,
      now: clock,
      log: pino({ level: 'silent' }),
      random: () => 0.5,
      limits,
    }),
  );
  const outbox = createOutbox({
    store,
    now: clock,
    limits,
    onFull: (sid) => deliveries[0]!.trim(sid),
    // Delivered by the next pass, as a woken instance would at once (the race has its own test).
    recordingMs: options.recordingMs ?? 0,
  });
  const versions = new Map<string, number>();
  return {
    store,
    outbox,
    requests,
    deliveries,
    answer: (next: typeof answer) => (answer = next),
    advance: (ms: number) => (now += ms),
    now: clock,
    /** A change under session `sid`, with its event recorded in the same step. */
    async change(sid: string, event: BrokerEvent): Promise<void> {
      const written = await store.setVersioned(
        `baton:{${sid}}:record`,
        versions.get(sid) ?? 0,
        'x',
        1000 * HOUR,
        (await outbox.record(sid, event)) ?? undefined,
      );
      expect(written).toBe(true);
      versions.set(sid, (versions.get(sid) ?? 0) + 1);
      await outbox.recorded(sid);
    },
    /** Every instance runs one pass. */
    pass: () => Promise.all(deliveries.map((d) => d.runOnce())),
    /** Sessions due, over every shard of the schedule. */
    due: async () =>
      (await Promise.all(SHARDS.map((shard) => store.scheduleSize(keys.eventsDue(shard))))).reduce(
        (sum, size) => sum + size,
        0,
      ),
    /** Every dead letter, parsed, oldest first. */
    deadLetters: async () =>
      (await Promise.all(SHARDS.map((shard) => store.logNewest(keys.deadLetters(shard), 1e6))))
        .flat()
        .map((raw) => JSON.parse(raw) as Record<string, unknown>)
        .sort((a, b) => String(a.dead_at).localeCompare(String(b.dead_at))),
    /** The events the world recorded: ids in recording order, by session. */
    outboxIds: async (sid: string) =>
      (await store.listRange(keys.outbox(sid), 0, -1)).map(
        (raw) => (JSON.parse(raw) as { id: string }).id,
      ),
  };
}

const connected = (id: string): BrokerEvent => ({
  type: 'connection.created',
  connection: { id, api_origin: 'https://eu.api.example.test' },
});

/** What the receiver's library says of a request, at the receiver's clock `at`. */
function verify(secret: string, request: Request, at = request.at): unknown {
  vi.useFakeTimers({ now: at, toFake: ['Date'] });
  try {
    return new Webhook(secret).verify(request.body, request.headers);
  } finally {
    vi.useRealTimers();
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe('event delivery (Standard Webhooks)', () => {
  it('delivers an event whose instance stopped after writing it, though a pass found its outbox empty before', async () => {
    const w = world({ recordingMs: RECORDING_MS });
    // The write-ahead entry, then another instance's pass while the change is on its way.
    const entry = await w.outbox.record('s1', connected('c1'));
    await w.pass();
    // The change lands with its event; its instance stops before recorded().
    expect(await w.store.setVersioned('baton:{s1}:record', 0, 'x', HOUR, entry ?? undefined)).toBe(
      true,
    );
    w.advance(RECORDING_MS);
    await w.pass();
    expect(w.requests).toHaveLength(1);
    expect(await w.due()).toBe(0);
  });

  it('delivers an event recorded with its change, shaped and signed as the spec says', async () => {
    const w = world();
    await w.change('s1', connected('c1'));
    await w.pass();

    expect(w.requests).toHaveLength(1);
    const [request] = w.requests;
    expect(request!.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(request!.headers['webhook-timestamp']).toBe(String(T0 / 1000));
    expect(verify(OLD, request!)).toEqual({
      type: 'connection.created',
      timestamp: new Date(T0).toISOString(),
      data: {
        session: { ref: expect.stringMatching(/^ses_[A-Za-z0-9_-]{22}$/) },
        connection: { id: 'c1', api_origin: 'https://eu.api.example.test' },
      },
    });
    // Nothing left: the outbox is empty and the session no longer due.
    expect(await w.store.listLength(keys.outbox('s1'))).toBe(0);
    expect(await w.due()).toBe(0);
  });

  it('signs with every secret during a rotation: receivers on the old or the new one verify', async () => {
    const w = world({ secrets: [OLD, NEW] });
    await w.change('s1', connected('c1'));
    await w.pass();

    const [request] = w.requests;
    expect(request!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verify(OLD, request!)).toMatchObject({ type: 'connection.created' });
    expect(verify(NEW, request!)).toMatchObject({ type: 'connection.created' });
    const stranger = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(() => verify(stranger, request!)).toThrow(/No matching signature/);
    expect(() => verify(OLD, { ...request!, body: request!.body.replace('c1', 'c2') })).toThrow(
      /No matching signature/,
    );
  });

  it('a stale timestamp is refused by the receiver; a replay inside the window is the same id', async () => {
    const w = world();
    await w.change('s1', connected('c1'));
    await w.pass();
    const [request] = w.requests;

    // Replayed ten minutes later: the library refuses it as too old.
    expect(() => verify(OLD, request!, request!.at + 10 * 60_000)).toThrow(/too old/);
    // Replayed at once: it verifies, and carries the id the receiver has already seen (a
    // receiver keeps the ids it processed, docs/events.md).
    expect(verify(OLD, request!, request!.at + 1000)).toMatchObject({ type: 'connection.created' });
  });

  it('a receiver down for most of a day gets every event once it is back, in order', async () => {
    const w = world();
    w.answer(() => new Response(null, { status: 503 }));
    await w.change('s1', connected('c1'));
    await w.change('s1', {
      type: 'connection.disconnected',
      connection: {
        id: 'c1',
        api_origin: 'https://eu.api.example.test',
        reason: 'refresh_rejected',
      },
    });
    await w.change('s1', connected('c2'));

    // 23 hours of failures, the clock moved a minute at a time.
    while (w.now() < T0 + 23 * HOUR) {
      await w.pass();
      w.advance(60_000);
    }
    const attempts = w.requests.map((r) => r.at);
    expect(new Set(w.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
    expect(gaps[0]).toBeLessThanOrEqual(60_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(HOUR + 60_000);
    expect(gaps.at(-1)).toBeGreaterThanOrEqual(HOUR / 2);
    expect(attempts.length).toBeLessThan(50);

    w.answer(() => new Response(null, { status: 204 }));
    while (w.now() < T0 + 25 * HOUR && (await w.store.listLength(keys.outbox('s1'))) > 0) {
      await w.pass();
      w.advance(60_000);
    }
    const ok = w.requests.slice(attempts.length);
    expect(ok.map((r) => (JSON.parse(r.body) as { type: string }).type)).toEqual([
      'connection.created',
      'connection.disconnected',
      'connection.created',
    ]);
    expect(ok[0]!.headers['webhook-id']).toBe(w.requests[0]!.headers['webhook-id']);
  });

  it('gives up on an event after 24 hours: a dead letter, and the next one goes', async () => {
    const w = world();
    w.answer(
      (request) => new Response(null, { status: request.body.includes('"c1"') ? 500 : 204 }),
    );
    await w.change('s1', connected('c1'));
    await w.change('s1', connected('c2'));
    while (w.now() < T0 + 26 * HOUR) {
      await w.pass();
      w.advance(5 * 60_000);
    }
    const dead = await w.deadLetters();
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      type: 'connection.created',
      reason: 'expired',
      last_outcome: 'status 500',
      session_ref: expect.stringMatching(/^ses_/),
      recorded_at: new Date(T0).toISOString(),
    });
    expect(w.requests.filter((r) => r.body.includes('"c2"'))).toHaveLength(1);
    expect(w.deliveries[0]!.counters).toMatchObject({
      delivered: 1,
      deadLettered: { expired: 1, outbox_full: 0, backlog_full: 0 },
    });
  });

  it('a receiver down for 72 hours: every event delivered or dead-lettered and counted, none lost to a time to live', async () => {
    const w = world();
    w.answer(() => new Response(null, { status: 503 }));
    const recorded: string[] = [];
    // Events keep coming while the receiver is down: five in one session, hours apart, and one in
    // another session late on.
    for (let n = 0; n < 5; n++) {
      await w.change('s1', connected(`c${n}`));
      recorded.push((await w.outboxIds('s1')).at(-1)!);
      for (let minute = 0; minute < 4 * 60; minute += 5) {
        await w.pass();
        w.advance(5 * 60_000);
      }
    }
    while (w.now() < T0 + 50 * HOUR) {
      await w.pass();
      w.advance(5 * 60_000);
    }
    await w.change('s2', connected('late'));
    recorded.push((await w.outboxIds('s2'))[0]!);
    while (w.now() < T0 + 72 * HOUR) {
      await w.pass();
      w.advance(5 * 60_000);
    }
    // The first 22 hours of the late event's window passed with the receiver down; it comes back.
    w.answer(() => new Response(null, { status: 204 }));
    while (w.now() < T0 + 74 * HOUR) {
      await w.pass();
      w.advance(5 * 60_000);
    }

    const dead = await w.deadLetters();
    const delivered = w.requests.slice(-1).map((r) => r.headers['webhook-id']);
    expect(await w.outboxIds('s1')).toEqual([]);
    expect(await w.outboxIds('s2')).toEqual([]);
    expect(dead.map((letter) => letter.id)).toEqual(recorded.slice(0, 5));
    for (const letter of dead) {
      expect(letter.reason).toBe('expired');
      // Dead-lettered when its own window ended (the pass after), not before.
      const age = Date.parse(String(letter.dead_at)) - Date.parse(String(letter.recorded_at));
      expect(age).toBeGreaterThanOrEqual(24 * HOUR);
      expect(age).toBeLessThanOrEqual(24 * HOUR + 5 * 60_000);
    }
    expect(delivered).toEqual([recorded[5]]);
    const counters = w.deliveries[0]!.counters;
    expect(counters.deadLettered.expired + counters.delivered).toBe(recorded.length);
    expect(counters.delivered).toBe(1);
    expect(await w.due()).toBe(0);
  });

  it('holds one session to EVENTS_OUTBOX_MAX: the oldest events past it are dead-lettered and counted', async () => {
    const w = world({ limits: { perSession: 10 } });
    w.answer(() => new Response(null, { status: 503 }));
    await w.change('s1', connected('c0'));
    await w.pass();
    const ids: string[] = [(await w.outboxIds('s1'))[0]!];
    for (let n = 1; n < 14; n++) {
      w.advance(1000);
      await w.change('s1', connected(`c${n}`));
      ids.push((await w.outboxIds('s1')).at(-1)!);
    }
    expect(await w.outboxIds('s1')).toEqual(ids.slice(4));
    const dead = await w.deadLetters();
    expect(dead.map((letter) => letter.id)).toEqual(ids.slice(0, 4));
    expect(dead.map((letter) => letter.reason)).toEqual(Array(4).fill('outbox_full'));
    expect(dead[0]).toMatchObject({ attempts: 1, last_outcome: 'status 503' });
    expect(w.deliveries[0]!.counters.deadLettered.outbox_full).toBe(4);
    expect((await w.deliveries[0]!.backlog()).events).toBe(10);
  });

  it('holds the admin outbox to the backlog only: redeliveries and actions in a burst stay', async () => {
    const w = world({ limits: { perSession: 1 } });
    w.answer(() => new Response(null, { status: 503 }));
    for (let n = 0; n < 5; n++) await w.change(ADMIN_OUTBOX, connected(`c${n}`));
    await w.pass();
    expect(await w.outboxIds(ADMIN_OUTBOX)).toHaveLength(5);
    expect(await w.deadLetters()).toEqual([]);
  });

  it('holds every session to EVENTS_BACKLOG_MAX: the sessions waiting longest give up their oldest events', async () => {
    const w = world({ limits: { backlog: 100 } });
    w.answer(() => new Response(null, { status: 503 }));
    for (const sid of ['s1', 's2', 's3']) {
      for (let n = 0; n < 50; n++) await w.change(sid, connected(`${sid}-c${n}`));
      await w.pass();
      w.advance(1000);
    }
    w.advance(60_000);
    await w.pass();
    const backlog = await w.deliveries[0]!.backlog();
    expect(backlog.events).toBe(100);
    expect(w.deliveries[0]!.counters.deadLettered.backlog_full).toBe(50);
    expect(await w.outboxIds('s1')).toEqual([]);
    expect((await w.outboxIds('s2')).length + (await w.outboxIds('s3')).length).toBe(100);
    expect(backlog.deadLetters).toBe(50);
  });

  it('over EVENTS_BACKLOG_MAX, the oldest events go first, whatever their shard', async () => {
    // 120 events of one session in the last shard, then 3 newer ones of another in the first.
    const [older, newer] = ['Pold', 'Anew'];
    expect([eventShard(older), eventShard(newer)]).toEqual([EVENT_SHARDS - 1, 0]);
    const w = world({ limits: { perSession: 200, backlog: 120 } });
    w.answer(() => new Response(null, { status: 503 }));
    for (let n = 0; n < 120; n++) await w.change(older, connected(`old-${n}`));
    w.advance(60_000);
    for (let n = 0; n < 3; n++) await w.change(newer, connected(`new-${n}`));
    const olderIds = await w.outboxIds(older);
    const newerIds = await w.outboxIds(newer);

    await w.pass();

    expect(await w.outboxIds(newer)).toEqual(newerIds);
    expect(await w.outboxIds(older)).toEqual(olderIds.slice(3));
    const dead = await w.deadLetters();
    expect(dead.map((letter) => letter.id).sort()).toEqual(olderIds.slice(0, 3).sort());
    expect(dead.map((letter) => letter.reason)).toEqual(Array(3).fill('backlog_full'));
    expect((await w.deliveries[0]!.backlog()).events).toBe(120);
  });

  it("one session's overflow does not push the other sessions' dead letters out", async () => {
    // Twenty dead letters a shard, so two a session; 'sX' and 'sY' share a shard.
    const w = world({ limits: { perSession: 1, deadLetters: EVENT_SHARDS * 20 } });
    expect(eventShard('sX')).toBe(eventShard('sY'));
    w.answer(() => new Response(null, { status: 503 }));
    for (let n = 0; n < 3; n++) await w.change('sY', connected(`y${n}`));
    const others = (await w.deadLetters()).map((letter) => letter.id);
    expect(others).toHaveLength(2);

    const overflow: string[] = [];
    for (let n = 0; n < 50; n++) {
      w.advance(1000);
      overflow.push(...(await w.outboxIds('sX')));
      await w.change('sX', connected(`x${n}`));
    }

    const dead = (await w.deadLetters()).map((letter) => letter.id);
    expect(dead).toEqual([...others, ...overflow.slice(0, 2)]);
    const counters = w.deliveries[0]!.counters;
    expect(counters.deadLettered.outbox_full).toBe(2 + 49);
    expect(counters.deadLettersDropped).toBe(47);
  });

  it('keeps the dead letters within their count, dropping the oldest and counting them', async () => {
    // Two dead letters a shard; six sessions of one shard each overflow once.
    const w = world({ limits: { perSession: 1, deadLetters: EVENT_SHARDS * 2 } });
    w.answer(() => new Response(null, { status: 503 }));
    const sessions = ['s0', 's1', 's2', 's3', 's4', 's5'];
    expect(new Set(sessions.map(eventShard)).size).toBe(1);
    const first: string[] = [];
    for (const sid of sessions) {
      w.advance(1000);
      await w.change(sid, connected(`${sid}-a`));
      first.push((await w.outboxIds(sid))[0]!);
      await w.change(sid, connected(`${sid}-b`));
    }
    const dead = await w.deadLetters();
    expect(dead.map((letter) => letter.id)).toEqual(first.slice(4));
    expect(w.deliveries[0]!.counters.deadLettered.outbox_full).toBe(6);
    expect(w.deliveries[0]!.counters.deadLettersDropped).toBe(4);
  });

  it('honours Retry-After', async () => {
    const w = world();
    w.answer(() => new Response(null, { status: 429, headers: { 'retry-after': '120' } }));
    await w.change('s1', connected('c1'));
    await w.pass();
    w.answer(() => new Response(null, { status: 204 }));
    w.advance(119_000);
    await w.pass();
    expect(w.requests).toHaveLength(1);
    w.advance(1000);
    await w.pass();
    expect(w.requests).toHaveLength(2);
  });

  it('a session woken by each new event while its head waits out a back-off is not tried early: a short outage costs one attempt, not one per event', async () => {
    // The soak (standalone, seed 107): a receiver down for five seconds burned eight or nine
    // attempts of three sessions' heads, one per event their users caused meanwhile, and the
    // doubled back-off then held them for up to fifteen minutes after the receiver was back.
    const w = world();
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    w.answer(() => {
      throw new TypeError('fetch failed');
    });
    await w.change('s1', connected('c1'));
    w.deliveries[0]!.wake('s1');
    await settled();
    expect(w.requests).toHaveLength(1);
    for (let i = 2; i <= 5; i++) {
      w.advance(200);
      await w.change('s1', connected(`c${i}`));
      w.deliveries[0]!.wake('s1');
      await settled();
    }
    expect(w.requests).toHaveLength(1);
    // Still scheduled: once the back-off ends, the poll delivers all five, in order.
    w.answer(() => new Response(null, { status: 204 }));
    w.advance(10_000);
    await w.pass();
    const ids = w.requests
      .slice(1)
      .map((r) => JSON.parse(r.body) as { data: { connection: { id: string } } });
    expect(ids.map((body) => body.data.connection.id)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('three instances deliver each event once, a session from one instance at a time', async () => {
    const w = world({ instances: 3 });
    // The receiver answers a little later, so that the instances' passes overlap.
    const inFlight = new Map<string, number>();
    let most = 0;
    w.answer(async (request) => {
      const ref = (JSON.parse(request.body) as { data: { session: { ref: string } } }).data.session
        .ref;
      inFlight.set(ref, (inFlight.get(ref) ?? 0) + 1);
      most = Math.max(most, inFlight.get(ref)!);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight.set(ref, inFlight.get(ref)! - 1);
      return new Response(null, { status: 204 });
    });
    for (let i = 0; i < 12; i++) await w.change(`s${i % 4}`, connected(`c${i}`));
    await w.pass();
    await w.pass();

    const ids = w.requests.map((r) => r.headers['webhook-id']);
    expect(most).toBe(1);
    expect(ids).toHaveLength(12);
    expect(new Set(ids).size).toBe(12);
    for (let s = 0; s < 4; s++) {
      const order = w.requests
        .map((r) => JSON.parse(r.body) as { data: { connection: { id: string } } })
        .map((body) => Number(body.data.connection.id.slice(1)))
        .filter((n) => n % 4 === s);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  });
});
