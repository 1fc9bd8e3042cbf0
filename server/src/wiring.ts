import { RedisStore as SessionRedisStore } from 'connect-redis';
import { MemoryStore } from 'express-session';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import type { AppDeps } from './app.ts';
import { keys } from './keys.ts';
import { createMemoryStore } from './store/memory.ts';
import { bounded, createRedisStore, type RedisClient } from './store/redis.ts';

/** FLOW_TTL in seconds, for the authorization window's session. */
const AUTH_SESSION_TTL_SECONDS = 600;

/**
 * The three stores the app needs, on one Redis client (connect-redis for the authorization
 * session, rate-limit-redis for the limits), or all embedded in memory when there is no Redis.
 */
export function storeDeps(
  redis: RedisClient | undefined,
  now?: () => number,
  onRedisError?: () => void,
): Pick<AppDeps, 'store' | 'sessionStore' | 'rateLimitStore'> {
  if (!redis) return { store: createMemoryStore(now), sessionStore: new MemoryStore() };
  return {
    store: createRedisStore(redis, onRedisError),
    sessionStore: new SessionRedisStore({
      // The commands connect-redis sends for express-session, each bounded like the broker's own.
      client: {
        get: (key: string) => bounded(redis.get(key)),
        set: (...args: Parameters<RedisClient['set']>) => bounded(redis.set(...args)),
        expire: (...args: Parameters<RedisClient['expire']>) => bounded(redis.expire(...args)),
        del: (...args: Parameters<RedisClient['del']>) => bounded(redis.del(...args)),
      },
      prefix: keys.authSessionPrefix,
      ttl: AUTH_SESSION_TTL_SECONDS,
    }),
    rateLimitStore: (prefix) =>
      new RateLimitRedisStore({
        prefix: `${keys.rateLimitPrefix}${prefix}`,
        sendCommand: (...args: string[]) => bounded(redis.sendCommand(args)),
      }),
  };
}
