import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from './ports.ts';
import { RedisServer } from './redis.ts';
import { until } from './wait.ts';

const run = promisify(execFile);

/**
 * Runs `redis-cli -p <port> ...` and returns what it printed. redis-cli exits 0 on an error reply
 * (it prints `ERR ...`), so callers check the text, not only that this resolved.
 */
export async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 5_000,
  });
  return stdout;
}

/** The last lines a server wrote, for a timeout message that explains itself. */
export function tail(label: string, lines: readonly string[], count = 20): string {
  return `--- ${label} (last ${count} lines) ---\n${lines.slice(-count).join('\n')}`;
}

/** `until`, but a timeout says what the servers were saying. */
export async function untilOrExplain(
  condition: () => Promise<boolean>,
  options: { deadlineMs: number; what: string },
  explain: () => string,
): Promise<void> {
  try {
    await until(async () => condition().catch(() => false), { ...options, intervalMs: 100 });
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${explain()}`, { cause: error });
  }
}

export interface ClusterNode {
  host: string;
  port: number;
  url: string;
}

/**
 * A real Redis Cluster, each node a redis-server on its own free loopback port and temp dir, with
 * `appendonly yes`: masters only by default, or with `replicas` per master (which the cluster
 * promotes when a master stops answering for --cluster-node-timeout). For testing code that must
 * work against a cluster: keys spread over slots on several nodes, MOVED redirects, multi-key
 * commands that need a hash tag, failovers.
 */
export class RedisCluster {
  readonly nodes: ClusterNode[];
  readonly servers: readonly RedisServer[];

  private constructor(servers: RedisServer[], replicas: number) {
    this.servers = servers;
    this.#replicas = replicas;
    this.nodes = servers.map((server) => ({
      host: '127.0.0.1',
      port: server.port,
      url: server.url,
    }));
  }

  readonly #replicas: number;

  static async start(options: { masters?: number; replicas?: number } = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 0;
    if (masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters');
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < masters * (1 + replicas); i++) servers.push(await startNode());
      const cluster = new RedisCluster(servers, replicas);
      await cluster.#create();
      return cluster;
    } catch (error) {
      await Promise.all(servers.map((server) => server[Symbol.asyncDispose]()));
      throw error;
    }
  }

  /** For REDIS_CLUSTER_NODES: every node, comma-separated. */
  get rootNodes(): string {
    return this.nodes.map((node) => node.url).join(',');
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((server) => server[Symbol.asyncDispose]()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * `--cluster create` returns once the nodes agree on the configuration, which can be before
   * every node has seen every other one's slots (gossip); a client that starts then may be told
   * CLUSTERDOWN. So this waits until every node itself says the cluster is whole.
   */
  async #create(): Promise<void> {
    const addresses = this.nodes.map((node) => `127.0.0.1:${node.port}`);
    try {
      await run(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...addresses,
          '--cluster-replicas',
          String(this.#replicas),
          '--cluster-yes',
        ],
        { timeout: 30_000 },
      );
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(
        `redis-cli --cluster create failed:\n${stdout}${stderr}\n${this.#explain()}`,
        {
          cause: error,
        },
      );
    }
    await untilOrExplain(
      async () => {
        const infos = await Promise.all(
          this.nodes.map((node) => redisCli(node.port, 'cluster', 'info')),
        );
        return infos.every(
          (info) =>
            info.includes('cluster_state:ok') &&
            info.includes('cluster_slots_assigned:16384') &&
            info.includes(`cluster_known_nodes:${this.nodes.length}`),
        );
      },
      { deadlineMs: 20_000, what: 'every cluster node to report cluster_state:ok with all slots' },
      () => this.#explain(),
    );
    if (this.#replicas === 0) return;
    // A replica can take over only once it has synced with its master.
    await untilOrExplain(
      async () => {
        const roles = await Promise.all(
          this.nodes.map((node) => redisCli(node.port, 'info', 'replication')),
        );
        const replicas = roles.filter((info) => info.includes('role:slave'));
        return (
          replicas.length === this.nodes.length - this.nodes.length / (1 + this.#replicas) &&
          replicas.every((info) => info.includes('master_link_status:up'))
        );
      },
      { deadlineMs: 30_000, what: 'every replica to be in sync with its master' },
      () => this.#explain(),
    );
  }

  /** The node that serves `key`'s slot as master now, as a node other than `avoid` sees it. */
  async masterOf(key: string, avoid?: RedisServer): Promise<RedisServer> {
    const asked = this.nodes.find((node) => node.port !== avoid?.port) ?? this.nodes[0]!;
    const slot = Number((await redisCli(asked.port, 'cluster', 'keyslot', key)).trim());
    const port = masterPorts(await redisCli(asked.port, 'cluster', 'nodes')).find(({ ranges }) =>
      ranges.some(([from, to]) => slot >= from && slot <= to),
    )?.port;
    const server = this.servers.find((candidate) => candidate.port === port);
    if (!server) throw new Error(`no master serves slot ${slot}`);
    return server;
  }

  /** Resolves once a node other than `old` serves `key`'s slot as master (a failover). */
  async failedOver(key: string, old: RedisServer, deadlineMs = 30_000): Promise<RedisServer> {
    let promoted: RedisServer | undefined;
    await untilOrExplain(
      async () => {
        promoted = await this.masterOf(key, old);
        return promoted.port !== old.port;
      },
      { deadlineMs, what: `a replica of :${old.port} to be promoted` },
      () => this.#explain(),
    );
    return promoted!;
  }

  #explain(): string {
    return this.servers
      .map((server) => tail(`redis-server :${server.port}`, server.lines))
      .join('\n');
  }
}

/**
 * One cluster node. The cluster bus would default to port+10000, which nobody checked was free,
 * so it gets a free port of its own. Two ports free a moment ago can still be taken by the time
 * Redis binds them, so a node that fails to start is tried again on new ones.
 */
async function startNode(attempts = 3): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await RedisServer.start({
        appendonly: true,
        args: [
          '--cluster-enabled',
          'yes',
          // Relative to --dir, so each node's cluster state stays in its own temp dir.
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '2000',
          '--cluster-port',
          String(await freePort()),
        ],
      });
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

/** The masters of `CLUSTER NODES` output: their ports and the slot ranges they serve. */
function masterPorts(nodes: string): { port: number; ranges: [number, number][] }[] {
  return nodes
    .split('\n')
    .map((line) => line.trim().split(' '))
    .filter((fields) => (fields[2] ?? '').split(',').includes('master'))
    .filter((fields) => !(fields[2] ?? '').includes('fail'))
    .map((fields) => ({
      port: Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]),
      ranges: fields.slice(8).flatMap((range): [number, number][] => {
        if (range.startsWith('[')) return [];
        const [from, to = from] = range.split('-').map(Number) as [number, number?];
        return [[from, to]];
      }),
    }));
}
