import type { createRedisClient } from '@baton/server';

/** A connection to one standalone Redis. */
type RedisClient = ReturnType<typeof createRedisClient>;

/** One key as a release wrote it: its type, its whole value, and its time to live (-1: none). */
export type StoredKey = { key: string; pttl: number } & (
  | { type: 'string'; value: string }
  | { type: 'hash'; value: Record<string, string> }
  | { type: 'set'; value: string[] }
  | { type: 'list'; value: string[] }
  | { type: 'zset'; value: { member: string; score: number }[] }
);

async function* allKeys(client: RedisClient): AsyncGenerator<string> {
  let cursor = '0';
  do {
    const [next, batch] = (await client.sendCommand(['SCAN', cursor, 'COUNT', '1000'])) as [
      string,
      string[],
    ];
    cursor = String(next);
    yield* batch;
  } while (cursor !== '0');
}

async function read(client: RedisClient, key: string): Promise<StoredKey | null> {
  const [type, pttl] = await Promise.all([client.type(key), client.pTTL(key)]);
  if (pttl === -2) return null;
  switch (type) {
    case 'string':
      return { key, pttl, type, value: (await client.get(key)) ?? '' };
    case 'hash':
      return { key, pttl, type, value: { ...(await client.hGetAll(key)) } };
    case 'set':
      return { key, pttl, type, value: (await client.sMembers(key)).sort() };
    case 'list':
      return { key, pttl, type, value: await client.lRange(key, 0, -1) };
    case 'zset':
      return {
        key,
        pttl,
        type,
        value: (await client.zRangeWithScores(key, 0, -1)).map(({ value, score }) => ({
          member: value,
          score,
        })),
      };
    default:
      throw new Error(`${key} is a ${type}, which no release of the broker writes`);
  }
}

/** Every key of a (standalone) Redis, by name; a key that expires while it is read is left out. */
export async function dumpKeys(client: RedisClient): Promise<StoredKey[]> {
  const found: StoredKey[] = [];
  for await (const key of allKeys(client)) {
    const stored = await read(client, key);
    if (stored) found.push(stored);
  }
  return found.sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * Writes `keys` as they were, each with the time to live it had left when it was dumped, as if
 * that Redis had been stopped then and started now. `shiftScore(key)` is added to the scores of a
 * sorted set whose scores are times on Redis's own clock (TIME): they move on with the real time
 * since the dump, as the times to live do.
 */
export async function restoreKeys(
  client: RedisClient,
  keys: readonly StoredKey[],
  shiftScore: (key: string) => number = () => 0,
): Promise<void> {
  for (const stored of keys) {
    const { key } = stored;
    if (stored.type === 'string') await client.set(key, stored.value);
    else if (stored.type === 'hash') await client.hSet(key, stored.value);
    else if (stored.type === 'set') await client.sAdd(key, stored.value);
    else if (stored.type === 'list') await client.rPush(key, stored.value);
    else {
      const shift = shiftScore(key);
      await client.zAdd(
        key,
        stored.value.map(({ member, score }) => ({ value: member, score: score + shift })),
      );
    }
    if (stored.pttl > 0) await client.pExpire(key, stored.pttl);
  }
}
