import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from './ports.ts';
import { redisCli, tail, untilOrExplain } from './redis-cluster.ts';
import { RedisServer } from './redis.ts';

export interface RedisAddress {
  host: string;
  port: number;
}

export interface RedisSentinelSetOptions {
  /** The name the sentinels monitor the master under (REDIS_SENTINEL's `<name>@`). */
  masterName?: string;
  /**
   * Extra `--name value` arguments for both data servers, since either may be the master after a
   * failover (e.g. `min-replicas-to-write 1`, left out by default because it makes the master
   * refuse writes while the replica is down).
   */
  args?: string[];
}

/**
 * A real Redis master with one replica, watched by three sentinels (quorum 2), all on free
 * loopback ports with temp dirs and `appendonly yes`. For testing code that must survive a
 * failover: kill the master, wait for the sentinels to promote the replica, carry on.
 */
export class RedisSentinelSet {
  readonly masterName: string;
  /** The two data servers, in start order: the first started as master. */
  readonly servers: readonly RedisServer[];
  readonly sentinels: RedisAddress[];
  readonly #sentinels: Sentinel[];
  /** Port of the master as last seen by `currentMaster()` or `waitForFailover()`. */
  #masterPort: number;

  private constructor(masterName: string, servers: RedisServer[], sentinels: Sentinel[]) {
    this.masterName = masterName;
    this.servers = servers;
    this.#sentinels = sentinels;
    this.sentinels = sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port }));
    this.#masterPort = servers[0]!.port;
  }

  static async start(options: RedisSentinelSetOptions = {}): Promise<RedisSentinelSet> {
    const masterName = options.masterName ?? 'baton';
    // A master waits 5 s by default before a diskless full sync, for more replicas to join it.
    const args = ['--repl-diskless-sync-delay', '0', ...(options.args ?? [])];
    const servers: RedisServer[] = [];
    const sentinels: Sentinel[] = [];
    try {
      const master = await RedisServer.start({ appendonly: true, args });
      servers.push(master);
      const replica = await RedisServer.start({
        appendonly: true,
        args: ['--replicaof', '127.0.0.1', String(master.port), ...args],
      });
      servers.push(replica);
      // A sentinel learns of replicas from the master's INFO, which it asks for at once and then
      // every 10 s: a replica still syncing then would be missed for that long.
      await untilOrExplain(
        async () =>
          (await redisCli(replica.port, 'info', 'replication')).includes('master_link_status:up'),
        { deadlineMs: 10_000, what: 'the replica to sync with the master' },
        () => explainServers(servers),
      );
      for (let i = 0; i < 3; i++) sentinels.push(await Sentinel.start(masterName, master.port));
      const set = new RedisSentinelSet(masterName, servers, sentinels);
      await set.#untilReady();
      return set;
    } catch (error) {
      await Promise.all(sentinels.map((sentinel) => sentinel.stop()));
      await Promise.all(servers.map(discard));
      throw error;
    }
  }

  /** For REDIS_SENTINEL: `<name>@host:port,host:port,host:port`. */
  get env(): string {
    const addresses = this.sentinels.map((sentinel) => `${sentinel.host}:${sentinel.port}`);
    return `${this.masterName}@${addresses.join(',')}`;
  }

  /** The master as last seen (not asked now: a getter cannot wait for a sentinel). */
  get master(): RedisServer {
    return this.servers.find((server) => server.port === this.#masterPort)!;
  }

  /** The replica as last seen; after a failover, the old master (possibly dead). */
  get replica(): RedisServer {
    return this.servers.find((server) => server.port !== this.#masterPort)!;
  }

  /** Every sentinel's output, for debugging a failover. */
  get sentinelLines(): readonly (readonly string[])[] {
    return this.#sentinels.map((sentinel) => sentinel.lines);
  }

  /** The master according to the first sentinel that answers. */
  async currentMaster(): Promise<RedisAddress> {
    for (const sentinel of this.#sentinels) {
      const address = await this.#masterAddress(sentinel.port).catch(() => undefined);
      if (address) {
        this.#masterPort = address.port;
        return address;
      }
    }
    throw new Error(`no sentinel knows the master of ${this.masterName}\n${this.#explain()}`);
  }

  /** SIGKILL the current master, as a crash would: no AOF flush, no goodbye to the replica. */
  async killMaster(): Promise<void> {
    await this.currentMaster();
    await this.master.kill();
  }

  /**
   * Waits until every sentinel names a master other than `previous` and that server says it is
   * one: a client asking any sentinel then gets a master that takes writes.
   */
  async waitForFailover(previous: { port: number }, timeoutMs = 20_000): Promise<RedisAddress> {
    let promoted: RedisAddress | undefined;
    await untilOrExplain(
      async () => {
        const addresses = await Promise.all(
          this.#sentinels.map((sentinel) => this.#masterAddress(sentinel.port)),
        );
        const [first] = addresses;
        if (!first || first.port === previous.port) return false;
        if (addresses.some((address) => address.port !== first.port)) return false;
        const role = await redisCli(first.port, 'role');
        if (role.split('\n')[0] !== 'master') return false;
        promoted = first;
        return true;
      },
      { deadlineMs: timeoutMs, what: `a failover away from port ${previous.port}` },
      () => this.#explain(),
    );
    this.#masterPort = promoted!.port;
    return promoted!;
  }

  /**
   * Sentinels first, so none of them starts a failover while the servers go down. The servers
   * get SIGKILL (see `discard`), not SIGTERM: a replica that has just synced is writing its
   * first AOF, and Redis 7.0 then answers SIGTERM with "Writing initial AOF, can't exit." and
   * keeps running, which would leave `RedisServer.stop()` waiting forever. Their data is thrown
   * away here anyway.
   */
  async stop(): Promise<void> {
    await Promise.all(this.#sentinels.map((sentinel) => sentinel.stop()));
    await Promise.all(this.servers.map(discard));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * A failover needs each sentinel to know the master, the other two (to reach quorum and elect
   * a leader; they find each other through hello messages on the master, every 2 s) and a
   * healthy replica to promote.
   */
  async #untilReady(): Promise<void> {
    const master = this.servers[0]!.port;
    const replica = this.servers[1]!.port;
    await untilOrExplain(
      async () => {
        for (const { port } of this.#sentinels) {
          if ((await this.#masterAddress(port)).port !== master) return false;
          const others = await sentinelJson(port, 'sentinels', this.masterName);
          if (others.length !== 2) return false;
          const replicas = await sentinelJson(port, 'replicas', this.masterName);
          const known = replicas.find((entry) => entry.port === String(replica));
          if (known?.flags !== 'slave' || known['master-link-status'] !== 'ok') return false;
        }
        return true;
      },
      { deadlineMs: 20_000, what: 'every sentinel to know the master, the replica and the others' },
      () => this.#explain(),
    );
  }

  async #masterAddress(sentinelPort: number): Promise<RedisAddress> {
    const reply = await redisCli(
      sentinelPort,
      'sentinel',
      'get-master-addr-by-name',
      this.masterName,
    );
    const [host, port] = reply.trim().split('\n');
    if (!host || !port) throw new Error(`sentinel :${sentinelPort} knows no master: ${reply}`);
    return { host, port: Number(port) };
  }

  #explain(): string {
    return [
      explainServers(this.servers),
      ...this.#sentinels.map((sentinel) =>
        tail(`redis-sentinel :${sentinel.port}`, sentinel.lines),
      ),
    ].join('\n');
  }
}

async function discard(server: RedisServer): Promise<void> {
  await server.kill();
  await server[Symbol.asyncDispose]();
}

function explainServers(servers: readonly RedisServer[]): string {
  return servers.map((server) => tail(`redis-server :${server.port}`, server.lines)).join('\n');
}

/** `SENTINEL <command> <name>` as a list of field maps (RESP3 makes redis-cli print maps). */
async function sentinelJson(
  port: number,
  command: string,
  name: string,
): Promise<Record<string, string>[]> {
  return JSON.parse(await redisCli(port, '--json', 'sentinel', command, name)) as Record<
    string,
    string
  >[];
}

/**
 * One redis-sentinel. It rewrites its config file (its id, what it learnt), so each gets a
 * writable file in its own temp dir. redis.ts's RedisServer only takes `--name value`
 * arguments, which sentinel mode needs a config file for. Exported for sets built otherwise
 * (test/soak/sentinel-set.ts: servers behind proxies).
 */
export class Sentinel {
  readonly port: number;
  readonly dir: string;
  readonly lines: string[] = [];
  #child: ChildProcess | undefined;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  static async start(masterName: string, masterPort: number): Promise<Sentinel> {
    const dir = await mkdtemp(join(tmpdir(), 'baton-sentinel-'));
    const sentinel = new Sentinel(await freePort(), dir);
    const config = join(dir, 'sentinel.conf');
    await writeFile(
      config,
      [
        `port ${sentinel.port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'sentinel resolve-hostnames no',
        `sentinel monitor ${masterName} 127.0.0.1 ${masterPort} 2`,
        `sentinel down-after-milliseconds ${masterName} 1000`,
        `sentinel failover-timeout ${masterName} 5000`,
        `sentinel parallel-syncs ${masterName} 1`,
        '',
      ].join('\n'),
    );
    try {
      await sentinel.#spawn(config);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    return sentinel;
  }

  /** Resolves once it monitors the master, which it only does after it listens. */
  async #spawn(config: string): Promise<void> {
    const child = spawn('redis-sentinel', [config], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    child.once('exit', () => {
      if (this.#child === child) this.#child = undefined;
    });
    await new Promise<void>((resolve, reject) => {
      const onLine = (line: string): void => {
        this.lines.push(line);
        if (line.includes('+monitor master')) resolve();
      };
      createInterface({ input: child.stdout! }).on('line', onLine);
      createInterface({ input: child.stderr! }).on('line', onLine);
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`redis-sentinel exited with ${code}:\n${this.lines.join('\n')}`)),
      );
    });
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}
