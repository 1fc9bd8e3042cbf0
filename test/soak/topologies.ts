/**
 * The soak's Redis topologies as world.ts starts them (soakTopology): the standalone server here,
 * Sentinel in sentinel-set.ts, Cluster in cluster-set.ts, each a SoakRedis (soak-redis.ts).
 */
import { redisCli, tail, untilOrExplain } from '../support/redis-cluster.ts';
import type { RedisServer } from '../support/redis.ts';
import type { RedisTopology } from '../support/redis-topology.ts';
import { ClusterSet } from './cluster-set.ts';
import { SentinelSet } from './sentinel-set.ts';
import {
  byName,
  DURABLE,
  proxied,
  restartOf,
  stopNodes,
  type Node,
  type ServerFault,
  type SoakRedis,
  type TopologyName,
} from './soak-redis.ts';

// ---------------------------------------------------------------- standalone

class Standalone implements SoakRedis {
  readonly kind = 'standalone';
  readonly nodes: readonly Node[];

  constructor(node: Node) {
    this.nodes = [node];
  }

  get node(): Node {
    return this.nodes[0]!;
  }

  env(): Record<string, string> {
    return { REDIS_URL: `redis://127.0.0.1:${this.node.proxy.port}` };
  }

  async masters(): Promise<RedisServer[]> {
    return this.node.server.running ? [this.node.server] : [];
  }

  async killMaster(): Promise<ServerFault> {
    await this.node.server.kill();
    return { target: `master ${byName(this.node)}`, heal: restartOf(this.node.server) };
  }

  async pauseMaster(): Promise<ServerFault> {
    this.node.server.pause();
    return { target: `master ${byName(this.node)}`, heal: async () => this.node.server.resume() };
  }

  setLatency(ms: number): void {
    this.node.proxy.setLatency(ms);
  }

  async whole(deadlineMs = 30_000): Promise<void> {
    await untilOrExplain(
      async () => (await redisCli(this.node.server.port, 'ping')).trim() === 'PONG',
      { deadlineMs, what: 'Redis to answer' },
      () => this.explain(),
    );
  }

  explain(): string {
    return tail(`redis-server ${byName(this.node)}`, this.node.server.lines);
  }

  stop(): Promise<void> {
    return stopNodes(this.nodes);
  }
}

// ---------------------------------------------------------------- the world's topology

async function startSoakRedis(kind: TopologyName): Promise<SoakRedis> {
  switch (kind) {
    case 'standalone':
      return new Standalone(await proxied(() => DURABLE));
    case 'sentinel':
      return SentinelSet.start();
    case 'cluster':
      return ClusterSet.start();
  }
}

/** A soak topology as world.ts starts and stops a Redis (startWorld's `redis`). */
export const soakTopology = (kind: TopologyName): RedisTopology<SoakRedis> => ({
  start: () => startSoakRedis(kind),
  env: (redis) => redis.env(),
  stop: (redis) => redis.stop(),
});
