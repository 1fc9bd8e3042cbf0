import { createRedisClient, createRedisStore, standalone } from '@baton/server';
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

describe('the client-side cache of records', () => {
  it('a cached read right after a fresh read on the same hash tag sees a write from another client', async () => {
    const other = createRedisClient(redis.url, 10_000);
    await other.connect();
    try {
      const mine = createRedisStore(standalone(client));
      const theirs = createRedisStore(standalone(other));
      const key = 'contract:{tag}:record';
      expect(await theirs.setVersioned(key, 0, 'first', 60_000)).toBe(true);
      expect(await mine.getVersioned(key, { cached: true })).toEqual({
        version: 1,
        value: 'first',
      });
      const hits = client.clientSideCache?.stats().hitCount ?? 0;
      expect(await mine.getVersioned(key, { cached: true })).toEqual({
        version: 1,
        value: 'first',
      });
      expect(client.clientSideCache?.stats().hitCount).toBe(hits + 1);

      expect(await theirs.setVersioned(key, 1, 'second', 60_000)).toBe(true);
      await mine.get('contract:{tag}:session');
      expect(await mine.getVersioned(key, { cached: true })).toEqual({
        version: 2,
        value: 'second',
      });
      await theirs.del(key);
      await mine.get('contract:{tag}:session');
      expect(await mine.getVersioned(key, { cached: true })).toBeNull();
    } finally {
      await other.close();
    }
  });
});
