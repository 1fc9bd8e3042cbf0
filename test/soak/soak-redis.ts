/**
 * What every soak Redis topology is made of: the topologies' names, the SoakRedis interface the
 * nemesis and the system drive them through, their servers each behind a TcpProxy (Node), and the
 * helpers that start, name, restart and stop those servers (topologies.ts, sentinel-set.ts,
 * cluster-set.ts build on them).
 */
import { RedisServer } from '../support/redis.ts';
import type { Random } from './random.ts';
import { TcpProxy } from './tcp-proxy.ts';

export const TOPOLOGIES = ['standalone', 'sentinel', 'cluster'] as const;
export type TopologyName = (typeof TOPOLOGIES)[number];

/**
 * What docs/operations.md asks of a Redis that keeps tokens: `appendonly yes` (RedisServer's
 * `appendonly: true`) with `appendfsync everysec`, and `noeviction`. (RedisServer puts
 * `--appendfsync always` first; the later argument wins.)
 */
export const DURABLE = ['--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction'];

/** One data server and the proxy the brokers (and the other servers) reach it through. */
export interface Node {
  server: RedisServer;
  proxy: TcpProxy;
}

/** A fault on a data server, healed by `heal` (its server restarted, or resumed). */
export interface ServerFault {
  /** Which server, as the report names it: `master :<proxy port>`... */
  target: string;
  /** A failover that took place (Sentinel, Cluster), ms from the fault to a new master. */
  failoverMs?: number;
  heal(): Promise<void>;
}

/**
 * A Redis deployment of one of the broker's topologies, every server behind a TcpProxy, with the
 * faults the nemesis makes on it. The brokers' environment names the proxies only.
 */
export interface SoakRedis {
  readonly kind: TopologyName;
  readonly nodes: readonly Node[];
  /** REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES, and REDIS_WAIT_REPLICAS where it applies. */
  env(): Record<string, string>;
  /** The servers that are masters now (each reached directly, for the checker's reads). */
  masters(): Promise<RedisServer[]>;
  /** SIGKILL a master; resolves once writes are taken again (after the failover, if any). */
  killMaster(random: Random): Promise<ServerFault>;
  /** SIGSTOP a master until healed (past the failure detection, a failover follows). */
  pauseMaster(random: Random): Promise<ServerFault>;
  /** A replica down (SIGKILL): WAIT goes unacknowledged. Undefined on standalone. */
  replicaDown?(random: Random): Promise<ServerFault>;
  /** Each way, on every broker connection. */
  setLatency(ms: number): void;
  /** Resolves once every server runs and the deployment is whole (replicas in sync). */
  whole(deadlineMs?: number): Promise<void>;
  /** Every server's (and sentinel's) last lines, for a failure's explanation. */
  explain(): string;
  stop(): Promise<void>;
}

export async function proxied(args: (proxyPort: number) => string[]): Promise<Node> {
  const proxy = await TcpProxy.start();
  const server = await RedisServer.start({ appendonly: true, args: args(proxy.port) });
  proxy.retarget(server.port);
  return { server, proxy };
}

export const byName = (node: Node): string => `:${node.proxy.port}`;

export async function stopNodes(nodes: readonly Node[]): Promise<void> {
  await Promise.all(
    nodes.map(async ({ server, proxy }) => {
      server.resume();
      await server.kill();
      await server[Symbol.asyncDispose]();
      await proxy.close();
    }),
  );
}

/** A server killed and started again on its port and data (its AOF). */
export function restartOf(server: RedisServer): () => Promise<void> {
  return async () => {
    server.resume();
    await server.start();
  };
}
