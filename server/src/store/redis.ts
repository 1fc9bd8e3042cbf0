import { createClient } from 'redis';
import { StoreUnavailableError, type Store } from './types.ts';

export type RedisClient = ReturnType<typeof createClient>;

const SET_VERSIONED = `
local current = redis.call('HGET', KEYS[1], 'v')
if (current or '0') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(ARGV[1]) + 1), 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;

const DELETE_IF_EQUALS = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const SET_ADD = `
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

const NOW_MS = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`;

const INDEX_PUT = `${NOW_MS}
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

const INDEX_COUNT = `${NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`;

/** A command Redis has not answered by then has failed: a frozen Redis must not hang requests. */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;

/**
 * `command`, failed with a StoreUnavailableError once it has gone unanswered for `ms`. node-redis's
 * own command timeout stops counting once a command is written, so against a Redis that accepts
 * connections but never answers (frozen, or a black-holed network) every request would hang.
 */
export function bounded<T>(command: Promise<T>, ms = REDIS_COMMAND_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`Redis did not answer within ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A node-redis client set up to fail fast: commands issued while disconnected are rejected at once
 * instead of queueing, so a Redis outage answers 503 quickly, and the client keeps reconnecting.
 * Every command the broker or its libraries send goes through `bounded`.
 */
export function createRedisClient(url: string): RedisClient {
  return createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2000,
      reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, 2000),
    },
  });
}

/** The Store on Redis. Every error of the client becomes a StoreUnavailableError. */
export function createRedisStore(client: RedisClient, onError: () => void = () => {}): Store {
  const guard = async <T>(operation: () => Promise<T>): Promise<T> => {
    try {
      return await bounded(operation());
    } catch (cause) {
      onError();
      throw new StoreUnavailableError('Redis did not answer', { cause });
    }
  };
  const script = (source: string, keys: string[], args: string[]) =>
    guard(() => client.eval(source, { keys, arguments: args }));

  return {
    get: (key) => guard(() => client.get(key)),
    set: async (key, value, ttlMs) => {
      await guard(() => client.set(key, value, { expiration: { type: 'PX', value: ttlMs } }));
    },
    setIfAbsent: async (key, value, ttlMs) =>
      (await guard(() =>
        client.set(key, value, { expiration: { type: 'PX', value: ttlMs }, condition: 'NX' }),
      )) === 'OK',
    take: (key) => guard(() => client.getDel(key)),
    del: async (...keys) => {
      // One key at a time keeps every command on one slot when the keys span several (Cluster).
      if (keys.length > 0) await guard(() => Promise.all(keys.map((key) => client.del(key))));
    },
    deleteIfEquals: async (key, value) => (await script(DELETE_IF_EQUALS, [key], [value])) === 1,
    getVersioned: async (key) => {
      const [version, value] = await guard(() => client.hmGet(key, ['v', 'd']));
      if (version === null || version === undefined || value === null || value === undefined)
        return null;
      return { version: Number(version), value };
    },
    setVersioned: async (key, expected, value, ttlMs) =>
      (await script(SET_VERSIONED, [key], [String(expected), value, String(ttlMs)])) === 1,
    setAdd: async (key, member, ttlMs) => {
      await script(SET_ADD, [key], [member, String(ttlMs)]);
    },
    setRemove: async (key, member) => {
      await guard(() => client.sRem(key, member));
    },
    setMembers: (key) => guard(() => client.sMembers(key)),
    indexPut: async (key, member, ttlMs) => {
      await script(INDEX_PUT, [key], [member, String(ttlMs)]);
    },
    indexRemove: async (key, member) => {
      await guard(() => client.zRem(key, member));
    },
    indexCount: async (key) => Number(await script(INDEX_COUNT, [key], [])),
    ping: async () => {
      await guard(() => client.ping());
    },
    close: async () => {
      if (client.isOpen) await client.close();
    },
  };
}
