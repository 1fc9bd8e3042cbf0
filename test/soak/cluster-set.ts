/** The Cluster topology: three masters with a replica each, every node behind a TcpProxy. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from '../support/ports.ts';
import { redisCli, tail, untilOrExplain } from '../support/redis-cluster.ts';
import type { RedisServer } from '../support/redis.ts';
import type { Random } from './random.ts';
import {
  byName,
  DURABLE,
  proxied,
  restartOf,
  stopNodes,
  type Node,
  type ServerFault,
  type SoakRedis,
} from './soak-redis.ts';

const run = promisify(execFile);

interface ClusterRole {
  node: Node;
  master: boolean;
  failed: boolean;
  slots: boolean;
  /** For a replica, the node id of its master. */
  of: string;
  id: string;
}

/**
 * Three masters with a replica each (`redis-cli --cluster create --cluster-replicas 1`), every
 * node announcing its proxy (`cluster-announce-port`) and its real bus port, so that the slots'
 * addresses a client learns and MOVED redirections name proxies while the cluster's own gossip
 * goes direct (a slowed bus would fail nodes over). `cluster-node-timeout` 2 s, as
 * test/support/redis-cluster.ts sets it.
 */
export class ClusterSet implements SoakRedis {
  readonly kind = 'cluster';
  readonly nodes: readonly Node[];

  constructor(nodes: Node[]) {
    this.nodes = nodes;
  }

  static async start(options: { masters?: number } = {}): Promise<ClusterSet> {
    const masters = options.masters ?? 3;
    const nodes: Node[] = [];
    try {
      for (let i = 0; i < masters * 2; i++) {
        const bus = String(await freePort());
        nodes.push(
          await proxied((port) => [
            ...DURABLE,
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '2000',
            '--cluster-port',
            bus,
            '--cluster-announce-ip',
            '127.0.0.1',
            '--cluster-announce-port',
            String(port),
            '--cluster-announce-bus-port',
            bus,
          ]),
        );
      }
      const set = new ClusterSet(nodes);
      const addresses = nodes.map((node) => `127.0.0.1:${node.proxy.port}`);
      await run(
        'redis-cli',
        ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'],
        { timeout: 60_000 },
      ).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(
          `redis-cli --cluster create failed:\n${error.stdout ?? ''}${error.stderr ?? ''}\n${set.explain()}`,
        );
      });
      await set.whole(60_000);
      return set;
    } catch (error) {
      await stopNodes(nodes);
      throw error;
    }
  }

  env(): Record<string, string> {
    return {
      REDIS_CLUSTER_NODES: this.nodes
        .map((node) => `redis://127.0.0.1:${node.proxy.port}`)
        .join(','),
      // Each write that matters waits for its shard's replica (docs/operations.md, Scaling).
      REDIS_WAIT_REPLICAS: '1',
    };
  }

  /** Every node's role as a running node other than `avoid` sees them (CLUSTER NODES). */
  async #roles(avoid?: Node): Promise<ClusterRole[]> {
    const asker = this.nodes.find((node) => node !== avoid && node.server.running);
    if (!asker) throw new Error('no cluster node runs');
    return this.#rolesAsking(asker);
  }

  /** Every node's role as `asker` sees them. */
  async #rolesAsking(asker: Node): Promise<ClusterRole[]> {
    const text = await redisCli(asker.server.port, 'cluster', 'nodes');
    return text
      .split('\n')
      .map((line) => line.trim().split(' '))
      .filter((fields) => fields.length >= 8)
      .flatMap((fields) => {
        const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
        const node = this.nodes.find((candidate) => candidate.proxy.port === port);
        if (!node) return [];
        const flags = (fields[2] ?? '').split(',');
        return [
          {
            node,
            id: fields[0] ?? '',
            master: flags.includes('master'),
            failed: flags.some((flag) => flag === 'fail' || flag === 'fail?'),
            slots: fields.length > 8,
            of: fields[3] ?? '-',
          },
        ];
      });
  }

  async masters(): Promise<RedisServer[]> {
    const roles = await this.#roles();
    return roles
      .filter((role) => role.master && role.slots && !role.failed && role.node.server.running)
      .map((role) => role.node.server);
  }

  async #pickMaster(random: Random): Promise<ClusterRole> {
    const roles = await this.#roles();
    const masters = roles.filter((role) => role.master && role.slots && !role.failed);
    return random.pick(masters);
  }

  async killMaster(random: Random): Promise<ServerFault> {
    const victim = await this.#pickMaster(random);
    const started = performance.now();
    await victim.node.server.kill();
    await untilOrExplain(
      async () => {
        const roles = await this.#roles(victim.node);
        // Its replica took its slots: a master with slots that is not the victim, for each shard.
        const serving = roles.filter((role) => role.master && role.slots && !role.failed);
        return (
          serving.length === this.nodes.length / 2 && !serving.some((r) => r.node === victim.node)
        );
      },
      { deadlineMs: 60_000, what: `a replica of ${byName(victim.node)} to take its slots` },
      () => this.explain(),
    );
    return {
      target: `master ${byName(victim.node)}`,
      failoverMs: performance.now() - started,
      heal: restartOf(victim.node.server),
    };
  }

  async pauseMaster(random: Random): Promise<ServerFault> {
    const victim = await this.#pickMaster(random);
    victim.node.server.pause();
    return {
      target: `master ${byName(victim.node)}`,
      heal: async () => victim.node.server.resume(),
    };
  }

  async replicaDown(random: Random): Promise<ServerFault> {
    const roles = await this.#roles();
    const replica = random.pick(roles.filter((role) => !role.master && !role.failed));
    await replica.node.server.kill();
    return { target: `replica ${byName(replica.node)}`, heal: restartOf(replica.node.server) };
  }

  setLatency(ms: number): void {
    for (const node of this.nodes) node.proxy.setLatency(ms);
  }

  /** Every node runs and says the cluster is ok; each master has a replica in sync. */
  async whole(deadlineMs = 60_000): Promise<void> {
    await untilOrExplain(
      async () => {
        if (this.nodes.some((node) => !node.server.running)) return false;
        const infos = await Promise.all(
          this.nodes.map((node) => redisCli(node.server.port, 'cluster', 'info')),
        );
        if (!infos.every((info) => info.includes('cluster_state:ok'))) return false;
        const roles = await this.#roles();
        if (roles.some((role) => role.failed)) return false;
        const masters = roles.filter((role) => role.master && role.slots);
        if (masters.length !== this.nodes.length / 2) return false;
        // Every node sees the same masters (a client may ask any of them for the slots).
        const names = (of: ClusterRole[]) =>
          of
            .filter((role) => role.master && role.slots)
            .map((role) => role.node.proxy.port)
            .sort()
            .join();
        for (const node of this.nodes)
          if (names(await this.#rolesAsking(node)) !== names(roles)) return false;
        for (const master of masters) {
          const replica = roles.find((role) => !role.master && role.of === master.id);
          if (!replica) return false;
          const info = await redisCli(replica.node.server.port, 'info', 'replication');
          if (!info.includes('master_link_status:up')) return false;
        }
        return true;
      },
      { deadlineMs, what: 'the cluster to be whole again' },
      () => this.explain(),
    );
  }

  explain(): string {
    return this.nodes
      .map((node) => tail(`redis-server ${byName(node)}`, node.server.lines))
      .join('\n');
  }

  stop(): Promise<void> {
    return stopNodes(this.nodes);
  }
}
