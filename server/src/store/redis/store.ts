import { format1Reads } from '../format1/redis.ts';
import type { Store } from '../types.ts';
import type { Redis } from './clients.ts';
import { createCollections } from './collections.ts';
import { createCommands, type CommandOptions } from './commands.ts';
import { createReads } from './reads.ts';
import { createWrites } from './writes.ts';

export interface RedisStoreOptions extends CommandOptions {
  /** Milliseconds, for the heartbeat's age (default performance.now). */
  clock?: () => number;
}

/**
 * The Store on Redis, in parts that each do one job, over the same commands (commands.ts: every
 * error of the client a StoreUnavailableError): the reads of keys, kept in process while Redis
 * vouches for them (reads.ts), the writes (writes.ts), the collections (collections.ts), their Lua
 * (scripts.ts), and the reads of data format 1 (../format1/redis.ts). Starts the heartbeat that
 * cached reads depend on; `close` stops it.
 */
export function createRedisStore(redis: Redis, options: RedisStoreOptions = {}): Store {
  const commands = createCommands(redis, options);
  const { get, getVersioned, stop } = createReads(
    commands,
    options.clock ?? (() => performance.now()),
  );
  const { client } = redis;
  return {
    get,
    getVersioned,
    ...createWrites(commands),
    ...createCollections(commands),
    ...format1Reads(commands.send),
    // Untracked (`send`): a value whose time left matters is never answered from the cache.
    getWithTtl: async (key) => {
      const [value, ttlMs] = await Promise.all([
        commands.send(key, ['GET', key]),
        commands.send(key, ['PTTL', key]),
      ]);
      return typeof value === 'string' && typeof ttlMs === 'number' && ttlMs >= 0
        ? { value, ttlMs }
        : null;
    },
    // SCAN on each master, each step bounded and guarded as every command is.
    scan: async function* (pattern) {
      for (const send of await commands.guard(() => redis.masters())) {
        let cursor = '0';
        do {
          const [next, batch] = (await commands.guard(() =>
            send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000']),
          )) as [string | number, string[]];
          cursor = String(next);
          yield* batch;
        } while (cursor !== '0');
      }
    },
    ping: async () => {
      await commands.guard(() => client.ping());
    },
    close: async () => {
      stop();
      if (client.isOpen) await client.close();
    },
  };
}
