import { RedisStore as SessionRedisStore } from 'connect-redis';
import { MemoryStore } from 'express-session';
import { RedisStore as RateLimitRedisStore, type RedisReply } from 'rate-limit-redis';
import type { AppDeps } from './app.ts';
import { FLOW_TTL_MS } from '../oauth/flows.ts';
import { keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import { bounded, type Redis } from '../store/redis/clients.ts';
import { createRedisStore, type RedisStoreOptions } from '../store/redis/store.ts';

/** The authorization window's session lives as long as the flow it holds. */
const AUTH_SESSION_TTL_SECONDS = FLOW_TTL_MS / 1000;

/**
 * The three stores the app needs, on one Redis of any topology (connect-redis for the
 * authorization session, rate-limit-redis for the limits), or all embedded in memory when there is
 * no Redis.
 */
export function storeDeps(
  redis: Redis | undefined,
  options: RedisStoreOptions & { now?: () => number } = {},
): Pick<AppDeps, 'store' | 'sessionStore' | 'rateLimitStore'> {
  if (!redis) return { store: createMemoryStore(options.now), sessionStore: new MemoryStore() };
  const { client } = redis;
  return {
    store: createRedisStore(redis, options),
    sessionStore: new SessionRedisStore({
      // The commands connect-redis sends for express-session, each bounded like the broker's own.
      client: {
        // Raw, so never from the client-side cache: an authorization window's flow is taken once.
        get: (key: string) => bounded(redis.sendCommand(key, ['GET', key])),
        set: (
          key: string,
          value: string,
          options?: { expiration: { type: 'EX'; value: number } },
        ) => bounded(client.set(key, value, options)),
        expire: (key: string, seconds: number) => bounded(client.expire(key, seconds)),
        del: (keys: string[]) => bounded(client.del(keys)),
      },
      prefix: keys.authSessionPrefix,
      ttl: AUTH_SESSION_TTL_SECONDS,
    }),
    rateLimitStore: (prefix) =>
      new RateLimitRedisStore({
        prefix: `${keys.rateLimitPrefix}${prefix}`,
        // With the key, so that a Cluster sends the script to the node that holds it.
        sendCommandCluster: ({ key, command }) =>
          bounded(redis.sendCommand(key, command)) as Promise<RedisReply>,
      }),
  };
}
