import {
  createRedisClient,
  createRedisStore,
  LIVENESS_MS,
  standalone,
  StoreUnavailableError,
  trackedAnswers,
} from '@baton/server';
import { storeContract } from '@baton/server/store-contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../support/redis.ts';

let redis: RedisServer;
let client: ReturnType<typeof createRedisClient>;

beforeAll(async () => {
  redis = await RedisServer.start();
  // With the client-side cache on, as the broker runs: every read must still see every write.
  client = createRedisClient(redis.url, 10_000);
  await client.connect();
});

afterAll(async () => {
  await client.close();
  await redis[Symbol.asyncDispose]();
});

/** Redis keeps real time; moving its clock means shortening every TTL of the contract's keys. */
async function advance(ms: number): Promise<void> {
  for await (const batch of client.scanIterator({ MATCH: 'contract:*' })) {
    for (const key of batch) {
      const ttl = await client.pTTL(key);
      if (ttl < 0) continue;
      if (ttl <= ms) await client.del(key);
      else await client.pExpire(key, ttl - ms);
    }
  }
}

storeContract('redis', () => ({ store: createRedisStore(standalone(client)), advance }));

describe('the client-side cache of sessions and records', () => {
  it('drop what another client changed once Redis’s invalidation is read, unasked', async () => {
    const other = createRedisClient(redis.url, 10_000);
    await other.connect();
    const mine = createRedisStore(standalone(client));
    const theirs = createRedisStore(standalone(other));
    try {
      const session = 'contract:{signout}:session';
      const record = 'contract:{signout}:record';
      await theirs.set(session, 'on', 60_000);
      expect(await theirs.setVersioned(record, 0, 'first', 60_000)).toBe(true);
      // Cached once the heartbeat has vouched for the connection.
      await expect
        .poll(async () => {
          const hits = trackedAnswers(client)!.hits;
          await mine.get(session, { cached: true });
          await mine.getVersioned(record, { cached: true });
          return trackedAnswers(client)!.hits - hits;
        })
        .toBe(2);

      // A sign-out and a disconnect elsewhere. Redis sent the invalidations on this client's own
      // connection before it answered those writes, but nothing orders their reading here with
      // the other connection's answers: a PING, answered after them, has them read first. It
      // asks for no key, so the reads below see the writes only if the pushed invalidations
      // dropped what was kept.
      await theirs.del(session);
      expect(await theirs.setVersioned(record, 1, 'second', 60_000)).toBe(true);
      await client.ping();
      expect(await mine.get(session, { cached: true })).toBeNull();
      expect(await mine.getVersioned(record, { cached: true })).toEqual({
        version: 2,
        value: 'second',
      });
    } finally {
      await theirs.close();
    }
  });

  it('are not used once Redis has not answered the heartbeat for a while: Redis is asked, and a frozen one fails', async () => {
    const own = createRedisClient(redis.url, 10_000);
    await own.connect();
    let now = 0;
    const store = createRedisStore(standalone(own), { clock: () => now });
    const key = 'contract:{frozen}:session';
    try {
      await store.set(key, 'on', 60_000);
      await expect
        .poll(async () => {
          const hits = trackedAnswers(own)!.hits;
          await store.get(key, { cached: true });
          return trackedAnswers(own)!.hits - hits;
        })
        .toBe(1);

      redis.pause();
      // Still vouched for: the copy is used (a write could not happen while Redis is frozen).
      expect(await store.get(key, { cached: true })).toBe('on');
      now += LIVENESS_MS;
      await expect(store.get(key, { cached: true })).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      redis.resume();
      await store.close().catch(() => {});
    }
  });

  it('are all dropped when the connection is lost, and Redis is read again once it is back', async () => {
    const own = createRedisClient(redis.url, 10_000);
    // As the broker does: node-redis tells its cache of an error only after its listeners.
    own.on('error', () => {});
    await own.connect();
    const store = createRedisStore(standalone(own));
    const key = 'contract:{lost}:session';
    try {
      await store.set(key, 'on', 60_000);
      await expect
        .poll(async () => {
          await store.get(key, { cached: true });
          return trackedAnswers(own)!.recall(key);
        })
        .toBe('on');

      await client.sendCommand(['CLIENT', 'KILL', 'ID', String(await own.clientId())]);
      await expect.poll(() => trackedAnswers(own)!.recall(key)).toBeUndefined();
      // Changed while nobody tracked it for this client: the new value, not the old one.
      await client.set(key, 'changed');
      await expect.poll(() => store.get(key, { cached: true }).catch(() => 'down')).toBe('changed');
    } finally {
      await store.close();
    }
  });

  it('are all dropped when Redis is flushed (FLUSHALL from another client)', async () => {
    const own = createRedisClient(redis.url, 10_000);
    own.on('error', () => {});
    await own.connect();
    const store = createRedisStore(standalone(own));
    const keys = ['contract:{flush}:a', 'contract:{flush}:b'];
    try {
      for (const key of keys) await store.set(key, 'on', 60_000);
      await expect
        .poll(async () => {
          for (const key of keys) await store.get(key, { cached: true });
          return keys.map((key) => trackedAnswers(own)!.recall(key));
        })
        .toEqual(['on', 'on']);
      await client.flushAll();
      await expect
        .poll(() => keys.map((key) => trackedAnswers(own)!.recall(key)))
        .toEqual([undefined, undefined]);
      expect(await store.get(keys[0]!, { cached: true })).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('track no key that is absent the first time it is read: unknown session tokens leave Redis’s tracking table flat', async () => {
    const own = createRedisClient(redis.url, 10_000);
    await own.connect();
    const store = createRedisStore(standalone(own));
    const trackedKeys = async () =>
      Number(/tracking_total_keys:(\d+)/.exec(await client.info('stats'))?.[1]);
    try {
      const known = 'contract:{known}:session';
      await store.set(known, 'on', 60_000);
      // Vouched for once the heartbeat has been answered: from then on reads may be kept.
      await expect
        .poll(
          async () => (
            await store.get(known, { cached: true }),
            trackedAnswers(own)!.recall(known)
          ),
        )
        .toBe('on');
      const before = await trackedKeys();
      for (let n = 0; n < 6000; n++)
        expect(await store.get(`contract:{unknown-${n}}:session`, { cached: true })).toBeNull();
      expect((await trackedKeys()) - before).toBeLessThan(10);
      // A key that exists is still kept, and still dropped when it changes.
      expect(await store.get(known, { cached: true })).toBe('on');
      await client.set(known, 'changed');
      await expect.poll(() => store.get(known, { cached: true })).toBe('changed');
    } finally {
      await store.close();
    }
  });

  it('track no record that is absent the first time it is read: a valid session naming connections it does not have leaves the tracking table flat', async () => {
    const own = createRedisClient(redis.url, 10_000);
    await own.connect();
    const store = createRedisStore(standalone(own));
    const trackedKeys = async () =>
      Number(/tracking_total_keys:(\d+)/.exec(await client.info('stats'))?.[1]);
    const session = 'contract:{valid}:session';
    const record = (id: number | string) => `contract:{valid}:connection:${id}`;
    try {
      await store.set(session, 'on', 60_000);
      await store.setVersioned(record('real'), 0, 'sealed', 60_000);
      // The session known and kept, as for every call of a user this broker serves.
      await expect
        .poll(
          async () => (
            await store.get(session, { cached: true, alongside: record('real') }),
            await store.getVersioned(record('real'), { cached: true }),
            trackedAnswers(own)!.recall(session)
          ),
        )
        .toBe('on');
      const before = await trackedKeys();
      for (let n = 0; n < 1000; n++) {
        // A call's session with the record it names, then its own read of that record, ...
        expect(await store.get(session, { cached: true, alongside: record(n) })).toBe('on');
        expect(await store.getVersioned(record(n), { cached: true })).toBeNull();
        // ... and a record read alone, as the connection list and refreshes do.
        expect(await store.getVersioned(record(`alone-${n}`), { cached: true })).toBeNull();
      }
      expect((await trackedKeys()) - before).toBeLessThan(10);
      // A record that exists is still kept, and still dropped when it changes.
      await expect
        .poll(
          async () => (
            await store.getVersioned(record('real'), { cached: true }),
            trackedAnswers(own)!.recall(record('real'))
          ),
        )
        .toEqual({ version: 1, value: 'sealed' });
      await client.set(record('real'), '2:resealed');
      await expect
        .poll(() => store.getVersioned(record('real'), { cached: true }))
        .toEqual({ version: 2, value: 'resealed' });
    } finally {
      await store.close();
    }
  });

  it('read a session not yet known and its record in one round trip, tracking neither, and lend the record to one read', async () => {
    const own = createRedisClient(redis.url, 10_000);
    await own.connect();
    let now = 0;
    const store = createRedisStore(standalone(own), { clock: () => now });
    const [session, record] = ['contract:{first}:session', 'contract:{first}:record'];
    const reads = async () =>
      [
        ...(await client.info('commandstats')).matchAll(
          /cmdstat_(?:get|getex|mget|eval):calls=(\d+)/g,
        ),
      ]
        .map(([, n]) => Number(n))
        .reduce((sum, n) => sum + n, 0);
    const trackedKeys = async () =>
      Number(/tracking_total_keys:(\d+)/.exec(await client.info('stats'))?.[1]);
    try {
      await store.set(session, 'on', 60_000);
      await store.setVersioned(record, 0, 'sealed', 60_000);
      // Vouched for once the heartbeat has been answered (a key of its own shows it).
      const probe = 'contract:{first}:probe';
      await store.set(probe, 'on', 60_000);
      await expect
        .poll(
          async () => (await store.get(probe, { cached: true }), trackedAnswers(own)!.known(probe)),
        )
        .toBe(true);
      const [before, tracked] = [await reads(), await trackedKeys()];
      expect(await store.get(session, { cached: true, alongside: record })).toBe('on');
      // Two GETEX written together (a write command: Redis tracks neither key) ...
      expect((await reads()) - before).toBe(2);
      expect(await trackedKeys()).toBe(tracked);
      // ... and the record lent to the call's own read of it, once.
      expect(await store.getVersioned(record, { cached: true })).toEqual({
        version: 1,
        value: 'sealed',
      });
      expect((await reads()) - before).toBe(2);
      expect(await store.getVersioned(record, { cached: true })).toEqual({
        version: 1,
        value: 'sealed',
      });
      expect((await reads()) - before).toBe(3);
      // Lent for 100 ms at most: later, it is read again.
      const [later, laterRecord] = ['contract:{later}:session', 'contract:{later}:record'];
      await store.set(later, 'on', 60_000);
      await store.setVersioned(laterRecord, 0, 'sealed', 60_000);
      expect(await store.get(later, { cached: true, alongside: laterRecord })).toBe('on');
      const lentAt = await reads();
      now += 100;
      expect(await store.getVersioned(laterRecord, { cached: true })).toEqual({
        version: 1,
        value: 'sealed',
      });
      expect((await reads()) - lentAt).toBe(1);
      // A connection its session does not have: lent as absent, neither read again nor tracked.
      const [absent, absentRecord] = ['contract:{absent}:session', 'contract:{absent}:record'];
      await store.set(absent, 'on', 60_000);
      const [readsBefore, trackedAtAbsent] = [await reads(), await trackedKeys()];
      expect(await store.get(absent, { cached: true, alongside: absentRecord })).toBe('on');
      expect(await store.getVersioned(absentRecord, { cached: true })).toBeNull();
      expect((await reads()) - readsBefore).toBe(2);
      expect(await trackedKeys()).toBe(trackedAtAbsent);
      // An unknown token's session: its record is neither lent nor tracked.
      const [unknownSession, unknownRecord] = [
        'contract:{nobody}:session',
        'contract:{nobody}:record',
      ];
      await client.set(unknownRecord, '1:planted');
      const trackedBefore = await trackedKeys();
      expect(
        await store.get(unknownSession, { cached: true, alongside: unknownRecord }),
      ).toBeNull();
      expect(await trackedKeys()).toBe(trackedBefore);
      const atUnknown = await reads();
      expect(await store.getVersioned(unknownRecord)).toEqual({ version: 1, value: 'planted' });
      expect((await reads()) - atUnknown).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('read a session and the record it needs in one round trip, and keep both', async () => {
    const own = createRedisClient(redis.url, 10_000);
    await own.connect();
    const store = createRedisStore(standalone(own));
    const [session, record] = ['contract:{together}:session', 'contract:{together}:record'];
    // Every read the store could make of them: GET, MGET or a script.
    const calls = async () =>
      [...(await client.info('commandstats')).matchAll(/cmdstat_(?:get|mget|eval):calls=(\d+)/g)]
        .map(([, n]) => Number(n))
        .reduce((sum, n) => sum + n, 0);
    try {
      await store.set(session, 'on', 60_000);
      await store.setVersioned(record, 0, 'sealed', 60_000);
      // The session and its record are read once untracked: neither was known to exist ...
      await expect
        .poll(
          async () => (
            await store.get(session, { cached: true, alongside: record }),
            [session, record].map((key) => trackedAnswers(own)!.known(key))
          ),
        )
        .toEqual([true, true]);
      trackedAnswers(own)!.forget(null);
      const before = await calls();
      // ... then with its record, in one command, and both kept.
      expect(await store.get(session, { cached: true, alongside: record })).toBe('on');
      expect((await calls()) - before).toBe(1);
      expect(trackedAnswers(own)!.recall(record)).toEqual({ version: 1, value: 'sealed' });
      expect(await store.getVersioned(record, { cached: true })).toEqual({
        version: 1,
        value: 'sealed',
      });
      expect((await calls()) - before).toBe(1);
      // Redis tracks both keys of that one read: another client's write drops each.
      await client.set(record, '2:resealed');
      await client.set(session, 'off');
      await expect.poll(() => trackedAnswers(own)!.recall(record)).toBeUndefined();
      await expect.poll(() => trackedAnswers(own)!.recall(session)).toBeUndefined();
      expect(await store.getVersioned(record, { cached: true })).toEqual({
        version: 2,
        value: 'resealed',
      });
    } finally {
      await store.close();
    }
  });
});

describe('data format 1 (the previous release)', () => {
  it('a versioned record stored as a hash {v, d} is read, and written over as format 2', async () => {
    const store = createRedisStore(standalone(client));
    const key = 'contract:{format1}:connection:c1';
    await client.hSet(key, { v: '3', d: 'k1.sealed' });
    await client.pExpire(key, 60_000);
    expect(await store.getVersioned(key)).toEqual({ version: 3, value: 'k1.sealed' });
    expect(await store.setVersioned(key, 2, 'stale', 60_000)).toBe(false);
    expect(await store.setVersioned(key, 3, 'k1.resealed', 60_000)).toBe(true);
    expect(await client.type(key)).toBe('string');
    expect(await client.get(key)).toBe('4:k1.resealed');
    expect(await store.getVersioned(key)).toEqual({ version: 4, value: 'k1.resealed' });
  });

  it('a set of connection ids becomes a compact hash on first use, its members and TTL kept', async () => {
    const store = createRedisStore(standalone(client));
    const key = 'contract:{format1}:connections';
    await client.sAdd(key, ['c1', 'c2']);
    await client.pExpire(key, 60_000);
    expect((await store.setMembers(key)).sort()).toEqual(['c1', 'c2']);
    expect(await client.type(key)).toBe('hash');
    expect(await client.pTTL(key)).toBeGreaterThan(50_000);
    await store.setRemove(key, 'c1');
    await store.setAdd(key, 'c3', 60_000);
    expect((await store.setMembers(key)).sort()).toEqual(['c2', 'c3']);
    expect(await client.sendCommand(['OBJECT', 'ENCODING', key])).toBe('listpack');
  });
});
