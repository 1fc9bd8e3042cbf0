/**
 * The Sentinel topology: a master and a replica, each behind a TcpProxy, watched by three
 * sentinels.
 */
import { redisCli, tail, untilOrExplain } from '../support/redis-cluster.ts';
import { Sentinel } from '../support/redis-sentinel.ts';
import type { RedisServer } from '../support/redis.ts';
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

const MASTER_NAME = 'baton';

/**
 * A master and a replica behind proxies, watched by three sentinels (quorum 2, a master down
 * after 1 s as test/support/redis-sentinel.ts sets them): the servers announce their proxies'
 * ports (`replica-announce-port`), the sentinels monitor the master's proxy, so every address a
 * sentinel hands out, before and after a failover, is a proxy.
 */
export class SentinelSet implements SoakRedis {
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
