import { RedisStore as SessionRedisStore } from 'connect-redis';
import { MemoryStore } from 'express-session';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import type { AppDeps } from './app.ts';
import { keys } from './keys.ts';
import { createMemoryStore } from './store/memory.ts';
import { createRedisStore, type RedisClient } from './store/redis.ts';

/** FLOW_TTL in seconds, for the authorization window's session. */
const AUTH_SESSION_TTL_SECONDS = 600;

/**
 * The three stores the app needs, on one Redis client (connect-redis for the authorization
 * session, rate-limit-redis for the limits), or all embedded in memory when there is no Redis.
 */
export function storeDeps(
  redis: RedisClient | undefined,
  now?: () => number,
): Pick<AppDeps, 'store' | 'sessionStore' | 'rateLimitStore'> {
  if (!redis) return { store: createMemoryStore(now), sessionStore: new MemoryStore() };
  return {
    store: createRedisStore(redis),
    sessionStore: new SessionRedisStore({
      client: redis,
      prefix: keys.authSessionPrefix,
      ttl: AUTH_SESSION_TTL_SECONDS,
    }),
    rateLimitStore: (prefix) =>
      new RateLimitRedisStore({
        prefix: `${keys.rateLimitPrefix}${prefix}`,
        sendCommand: (...args: string[]) => redis.sendCommand(args),
      }),
  };
}
