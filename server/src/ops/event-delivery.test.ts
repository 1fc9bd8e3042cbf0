import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import { backoffMs, createDelivery, retryAfterMs } from './event-delivery.ts';
import { createOutbox, parseWebhookSecret, type BrokerEvent } from './events.ts';

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

function world(options: { secrets?: string[]; instances?: number } = {}) {
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
    }),
  );
  const outbox = createOutbox({ store, now: clock });
  const versions = new Map<string, number>();
  return {
    store,
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
        HOUR,
        outbox.record(sid, event) ?? undefined,
      );
      expect(written).toBe(true);
      versions.set(sid, (versions.get(sid) ?? 0) + 1);
      await outbox.recorded(sid);
    },
    /** Every instance runs one pass. */
    pass: () => Promise.all(deliveries.map((d) => d.runOnce())),
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
    expect(await w.store.scheduleSize(keys.eventsDue)).toBe(0);
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
    const dead = await w.store.listRange(keys.deadLetters, 0, -1);
    expect(dead).toHaveLength(1);
    expect(JSON.parse(dead[0]!)).toMatchObject({
      type: 'connection.created',
      last_outcome: 'status 500',
      session_ref: expect.stringMatching(/^ses_/),
    });
    expect(w.requests.filter((r) => r.body.includes('"c2"'))).toHaveLength(1);
    expect(w.deliveries[0]!.counters).toMatchObject({ delivered: 1, deadLettered: 1 });
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

describe('back-off', () => {
  it('doubles from 5 s to an hour, with jitter between half and all of it', () => {
    expect(backoffMs(1, 0)).toBe(2500);
    expect(backoffMs(1, 0.999_999)).toBe(5000);
    expect(backoffMs(4, 0.5)).toBe(30_000);
    expect(backoffMs(30, 0.5)).toBe(0.75 * HOUR);
  });

  it('reads Retry-After in seconds or as a date, kept between 1 s and a day', () => {
    expect(retryAfterMs('30', T0)).toBe(30_000);
    expect(retryAfterMs('0', T0)).toBe(1000);
    expect(retryAfterMs(new Date(T0 + 90_000).toUTCString(), T0)).toBe(90_000);
    expect(retryAfterMs('999999', T0)).toBe(24 * HOUR);
    expect(retryAfterMs('soon', T0)).toBeUndefined();
    expect(retryAfterMs(null, T0)).toBeUndefined();
  });
});
