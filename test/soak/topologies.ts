import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from '../support/ports.ts';
import { redisCli, tail, untilOrExplain } from '../support/redis-cluster.ts';
import { Sentinel } from '../support/redis-sentinel.ts';
import { RedisServer } from '../support/redis.ts';
import type { RedisTopology } from '../support/redis-topology.ts';
import type { Random } from './random.ts';
import { TcpProxy } from './tcp-proxy.ts';

const run = promisify(execFile);

export const TOPOLOGIES = ['standalone', 'sentinel', 'cluster'] as const;
export type TopologyName = (typeof TOPOLOGIES)[number];

/**
 * What docs/operations.md asks of a Redis that keeps tokens: `appendonly yes` (RedisServer's
 * `appendonly: true`) with `appendfsync everysec`, and `noeviction`. (RedisServer puts
 * `--appendfsync always` first; the later argument wins.)
 */
const DURABLE = ['--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction'];

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

async function proxied(args: (proxyPort: number) => string[]): Promise<Node> {
  const proxy = await TcpProxy.start();
  const server = await RedisServer.start({ appendonly: true, args: args(proxy.port) });
  proxy.retarget(server.port);
  return { server, proxy };
}

const byName = (node: Node): string => `:${node.proxy.port}`;

async function stopNodes(nodes: readonly Node[]): Promise<void> {
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
function restartOf(server: RedisServer): () => Promise<void> {
  return async () => {
    server.resume();
    await server.start();
  };
}

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

// ---------------------------------------------------------------- sentinel

const MASTER_NAME = 'baton';

/**
 * A master and a replica behind proxies, watched by three sentinels (quorum 2, a master down
 * after 1 s as test/support/redis-sentinel.ts sets them): the servers announce their proxies'
 * ports (`replica-announce-port`), the sentinels monitor the master's proxy, so every address a
 * sentinel hands out, before and after a failover, is a proxy.
 */
class SentinelSet implements SoakRedis {
  readonly kind = 'sentinel';
  readonly nodes: readonly Node[];
  readonly sentinels: readonly Sentinel[];

  constructor(nodes: Node[], sentinels: Sentinel[]) {
    this.nodes = nodes;
    this.sentinels = sentinels;
  }

  static async start(): Promise<SentinelSet> {
    const common = ['--repl-diskless-sync-delay', '0', ...DURABLE];
    const announce = (port: number) => [
      '--replica-announce-ip',
      '127.0.0.1',
      '--replica-announce-port',
      String(port),
    ];
    const nodes: Node[] = [];
    const sentinels: Sentinel[] = [];
    try {
      const master = await proxied((port) => [...common, ...announce(port)]);
      nodes.push(master);
      nodes.push(
        await proxied((port) => [
          ...common,
          ...announce(port),
          '--replicaof',
          '127.0.0.1',
          String(master.proxy.port),
        ]),
      );
      for (let i = 0; i < 3; i++)
        sentinels.push(await Sentinel.start(MASTER_NAME, master.proxy.port));
      const set = new SentinelSet(nodes, sentinels);
      await set.whole();
      return set;
    } catch (error) {
      await Promise.all(sentinels.map((sentinel) => sentinel.stop()));
      await stopNodes(nodes);
      throw error;
    }
  }

  env(): Record<string, string> {
    const addresses = this.sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`);
    // REDIS_WAIT_REPLICAS is 1 by default with Sentinel; said here as the soak relies on it.
    return { REDIS_SENTINEL: `${MASTER_NAME}@${addresses.join(',')}`, REDIS_WAIT_REPLICAS: '1' };
  }

  /** The node every sentinel names as master, if they agree and it says it is one. */
  async #agreedMaster(): Promise<Node | undefined> {
    const ports = await Promise.all(
      this.sentinels.map(async (sentinel) => {
        const reply = await redisCli(
          sentinel.port,
          'sentinel',
          'get-master-addr-by-name',
          MASTER_NAME,
        );
        return Number(reply.trim().split('\n')[1]);
      }),
    );
    if (ports.some((port) => port !== ports[0])) return undefined;
    const node = this.nodes.find((candidate) => candidate.proxy.port === ports[0]);
    if (!node?.server.running) return undefined;
    const role = await redisCli(node.server.port, 'role');
    return role.split('\n')[0] === 'master' ? node : undefined;
  }

  async #master(): Promise<Node> {
    let master: Node | undefined;
    await untilOrExplain(
      async () => (master = await this.#agreedMaster()) !== undefined,
      { deadlineMs: 30_000, what: 'the sentinels to agree on a running master' },
      () => this.explain(),
    );
    return master!;
  }

  async masters(): Promise<RedisServer[]> {
    return [(await this.#master()).server];
  }

  async killMaster(): Promise<ServerFault> {
    const master = await this.#master();
    const started = performance.now();
    await master.server.kill();
    await untilOrExplain(
      async () => {
        const now = await this.#agreedMaster();
        return now !== undefined && now !== master;
      },
      { deadlineMs: 60_000, what: `a failover away from ${byName(master)}` },
      () => this.explain(),
    );
    return {
      target: `master ${byName(master)}`,
      failoverMs: performance.now() - started,
      heal: restartOf(master.server),
    };
  }

  async pauseMaster(): Promise<ServerFault> {
    const master = await this.#master();
    master.server.pause();
    return { target: `master ${byName(master)}`, heal: async () => master.server.resume() };
  }

  async replicaDown(): Promise<ServerFault> {
    const master = await this.#master();
    const replica = this.nodes.find((node) => node !== master)!;
    await replica.server.kill();
    return { target: `replica ${byName(replica)}`, heal: restartOf(replica.server) };
  }

  setLatency(ms: number): void {
    for (const node of this.nodes) node.proxy.setLatency(ms);
  }

  /**
   * Both servers run, one master the sentinels agree on, the other its replica in sync and known
   * to every sentinel as such, every sentinel knowing the other two: a failover can happen again.
   */
  async whole(deadlineMs = 60_000): Promise<void> {
    await untilOrExplain(
      async () => {
        if (this.nodes.some((node) => !node.server.running)) return false;
        const master = await this.#agreedMaster();
        if (!master) return false;
        const replica = this.nodes.find((node) => node !== master)!;
        const info = await redisCli(replica.server.port, 'info', 'replication');
        if (!info.includes('master_link_status:up')) return false;
        if (!info.includes(`master_port:${master.proxy.port}`)) return false;
        for (const sentinel of this.sentinels) {
          const others = await sentinelJson(sentinel.port, 'sentinels');
          if (others.length !== 2) return false;
          const replicas = await sentinelJson(sentinel.port, 'replicas');
          const known = replicas.find((entry) => entry.port === String(replica.proxy.port));
          if (known?.flags !== 'slave' || known['master-link-status'] !== 'ok') return false;
        }
        return true;
      },
      { deadlineMs, what: 'the Sentinel set to be whole again' },
      () => this.explain(),
    );
  }

  explain(): string {
    return [
      ...this.nodes.map((node) => tail(`redis-server ${byName(node)}`, node.server.lines)),
      ...this.sentinels.map((sentinel) => tail(`sentinel :${sentinel.port}`, sentinel.lines)),
    ].join('\n');
  }

  async stop(): Promise<void> {
    await Promise.all(this.sentinels.map((sentinel) => sentinel.stop()));
    await stopNodes(this.nodes);
  }
}

async function sentinelJson(port: number, command: string): Promise<Record<string, string>[]> {
  const text = await redisCli(port, '--json', 'sentinel', command, MASTER_NAME);
  return JSON.parse(text) as Record<string, string>[];
}

// ---------------------------------------------------------------- cluster

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
class ClusterSet implements SoakRedis {
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
