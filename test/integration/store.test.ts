import { createRedisClient, createRedisStore, type RedisClient } from '@baton/server';
import { storeContract } from '@baton/server/store-contract';
import { afterAll, beforeAll } from 'vitest';
import { RedisServer } from '../support/redis.ts';

let redis: RedisServer;
let client: RedisClient;

beforeAll(async () => {
  redis = await RedisServer.start();
  client = createRedisClient(redis.url);
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

storeContract('redis', () => ({ store: createRedisStore(client), advance }));
