import {
  createAdminOverStore,
  createDelivery,
  createLogger,
  createOutbox,
  createRedisClient,
  createRedisStore,
  eventShard,
  keys,
  noEvents,
  parseKeyring,
  parseWebhookSecret,
  standalone,
  type BrokerEvent,
} from '@baton/server';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisServer } from '../support/redis.ts';

/**
 * The outbox and its delivery on a real Redis, by three instances sharing it, on one injected
 * clock: a receiver down for a simulated day, then back. The receiver verifies with the
 * `standardwebhooks` package and processes each id once.
 */
const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
const HOUR = 3600 * 1000;

let redis: RedisServer;
let client: ReturnType<typeof createRedisClient>;

beforeAll(async () => {
  redis = await RedisServer.start();
  client = createRedisClient(redis.url, 0);
  await client.connect();
});

afterAll(async () => {
  await client.close();
  await redis[Symbol.asyncDispose]();
});

describe('the event outbox on Redis', () => {
  it('three instances, a receiver down for a day: every event arrives once per id, in order per connection', async () => {
    let now = Date.now();
    const clock = () => now;
    const store = createRedisStore(standalone(client));
    let up = false;
    const received: { id: string; at: number; body: string; headers: Record<string, string> }[] =
      [];
    const fetch: typeof globalThis.fetch = async (_url, init) => {
      const headers = init?.headers as Record<string, string>;
      received.push({ id: headers['webhook-id']!, at: now, body: String(init?.body), headers });
      return new Response(null, { status: up ? 204 : 503 });
    };
    const deliveries = Array.from({ length: 3 }, () =>
      createDelivery({
        store,
        url: 'https://receiver.example/hooks',
        secrets: [parseWebhookSecret(SECRET)!],
        fetch,
        now: clock,
        log: createLogger('silent'),
      }),
    );
    const outbox = createOutbox({ store, now: clock });

    // Four sessions, each with two connections going through created, disconnected, reconnected.
    const sids = ['a', 'b', 'c', 'd'].map(
      (s) => `outbox-test-${s}-${Math.random().toString(36).slice(2)}`,
    );
    const versions = new Map<string, number>();
    for (const step of [
      'connection.created',
      'connection.disconnected',
      'connection.reconnected',
    ] as const) {
      for (const sid of sids) {
        for (const id of ['c1', 'c2']) {
          const event: BrokerEvent =
            step === 'connection.disconnected'
              ? {
                  type: step,
                  connection: { id, api_origin: 'https://api.example', reason: 'refresh_rejected' },
                }
              : { type: step, connection: { id, api_origin: 'https://api.example' } };
          const key = keys.connection(sid, id);
          const version = versions.get(key) ?? 0;
          expect(
            await store.setVersioned(
              key,
              version,
              'sealed',
              HOUR * 48,
              (await outbox.record(sid, event))!,
            ),
          ).toBe(true);
          versions.set(key, version + 1);
          await outbox.recorded(sid);
        }
      }
      // The instances keep trying while the receiver is down.
      await Promise.all(deliveries.map((d) => d.runOnce()));
      now += 60_000;
    }

    const start = now;
    while (now < start + 24 * HOUR) {
      await Promise.all(deliveries.map((d) => d.runOnce()));
      now += 5 * 60_000;
    }
    const failedAttempts = received.length;
    expect(failedAttempts).toBeGreaterThan(4 * 20);
    // Only the head of each session's outbox was ever tried.
    expect(new Set(received.map((r) => r.id)).size).toBe(4);

    up = true;
    const due = async () =>
      (
        await Promise.all(sids.map((sid) => store.scheduleSize(keys.eventsDue(eventShard(sid)))))
      ).reduce((sum, size) => sum + size, 0);
    for (let i = 0; i < 30 && (await due()) > 0; i++) {
      await Promise.all(deliveries.map((d) => d.runOnce()));
      now += 5 * 60_000;
    }

    const webhook = new Webhook(SECRET);
    const processed = new Map<string, { session: string; connection: string; type: string }>();
    for (const each of received.slice(failedAttempts)) {
      vi.useFakeTimers({ now: each.at, toFake: ['Date'] });
      const payload = webhook.verify(each.body, each.headers) as {
        type: string;
        data: { session: { ref: string }; connection: { id: string } };
      };
      vi.useRealTimers();
      if (!processed.has(each.id))
        processed.set(each.id, {
          session: payload.data.session.ref,
          connection: payload.data.connection.id,
          type: payload.type,
        });
    }
    expect(processed.size).toBe(4 * 2 * 3);
    expect(received.length - failedAttempts).toBe(processed.size);
    const byConnection = new Map<string, string[]>();
    for (const { session, connection, type } of processed.values()) {
      const key = `${session}/${connection}`;
      byConnection.set(key, [...(byConnection.get(key) ?? []), type]);
    }
    expect(byConnection.size).toBe(8);
    for (const types of byConnection.values())
      expect(types).toEqual([
        'connection.created',
        'connection.disconnected',
        'connection.reconnected',
      ]);
    for (const sid of sids) expect(await store.listLength(keys.outbox(sid))).toBe(0);
    expect(deliveries.reduce((sum, d) => sum + d.counters.delivered, 0)).toBe(24);
  }, 120_000);

  it('an outbox whose session was never scheduled (instances died in between) is swept up by `admin events sweep`', async () => {
    let now = Date.now();
    const store = createRedisStore(standalone(client));
    const sid = `outbox-sweep-${Math.random().toString(36).slice(2)}`;
    const received: string[] = [];
    const delivery = createDelivery({
      store,
      url: 'https://receiver.example/hooks',
      secrets: [parseWebhookSecret(SECRET)!],
      fetch: async (_url, init) => {
        received.push(String(init?.body));
        return new Response(null, { status: 204 });
      },
      now: () => now,
      log: createLogger('silent'),
    });
    const outbox = createOutbox({ store, now: () => now });
    // The event is written with its change; its session's place in the schedule is lost (another
    // instance emptied the outbox meanwhile, and this one stopped before `recorded`).
    const event: BrokerEvent = {
      type: 'connection.removed',
      connection: { id: 'c9', api_origin: 'https://api.example' },
    };
    await store.setVersioned(keys.connection(sid, 'c9'), 0, 'sealed', HOUR);
    expect(
      await store.delRecording([keys.connection(sid, 'c9')], (await outbox.record(sid, event))!),
    ).toBe(true);
    await store.scheduleRemove(keys.eventsDue(eventShard(sid)), sid);

    await delivery.runOnce();
    expect(received).toHaveLength(0);
    const admin = createAdminOverStore({
      redis: standalone(client),
      store,
      keyring: parseKeyring(`k:${Buffer.alloc(32).toString('base64')}`),
      events: noEvents,
      now: Date.now,
      build: { version: 'test', revision: 'test' },
    });
    const operator = { name: 'test', role: 'operator' } as const;
    expect((await admin.sweepEvents(operator)).outboxes).toBeGreaterThanOrEqual(1);
    // The CLI schedules on the real clock.
    now = Date.now() + 1000;
    await delivery.runOnce();
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!)).toMatchObject({ type: 'connection.removed' });
    expect(await store.listLength(keys.outbox(sid))).toBe(0);
  });
});
