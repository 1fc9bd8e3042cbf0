import { RedisCluster } from './redis-cluster.ts';
import { RedisSentinelSet } from './redis-sentinel.ts';
import { RedisServer, type RedisServerOptions } from './redis.ts';

/** A Redis deployment of the world's: how to start it, how brokers reach it, how it stops. */
export interface RedisTopology<R> {
  start(): Promise<R>;
  /** REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES. */
  env(redis: R): Record<string, string>;
  stop(redis: R): Promise<void>;
}

/** A fresh redis-server of the test's own (the default). */
export const redisStandalone = (options: RedisServerOptions = {}): RedisTopology<RedisServer> => ({
  start: () => RedisServer.start(options),
  env: (redis) => ({ REDIS_URL: redis.url }),
  async stop(redis) {
    redis.resume();
    await redis[Symbol.asyncDispose]();
  },
});

/** A real Redis Cluster (redis-cluster.ts). */
export const redisCluster = (
  options: { masters?: number; replicas?: number } = {},
): RedisTopology<RedisCluster> => ({
  start: () => RedisCluster.start(options),
  env: (redis) => ({ REDIS_CLUSTER_NODES: redis.rootNodes }),
  stop: (redis) => redis.stop(),
});

/** A master, a replica and three sentinels (redis-sentinel.ts). */
export const redisSentinel = (): RedisTopology<RedisSentinelSet> => ({
  start: () => RedisSentinelSet.start(),
  // REDIS_WAIT_REPLICAS is 1 by default with Sentinel: every durable write waits for the replica.
  env: (redis) => ({ REDIS_SENTINEL: redis.env }),
  stop: (redis) => redis.stop(),
});
