import calculateSlot from 'cluster-key-slot';
import { createClient, createCluster, createSentinel } from 'redis';
import { TrackedCache, TrackedPooledCache, type TrackedAnswers } from './tracked.ts';
import { StoreUnavailableError } from '../types.ts';

/** The command surface a standalone client, a Sentinel client and a Cluster client share. */
export type RedisClient =
  | ReturnType<typeof createRedisClient>
  | ReturnType<typeof createSentinelClient>
  | ReturnType<typeof createClusterClient>;

/** A command Redis has not answered by then has failed: a frozen Redis must not hang requests. */
export const REDIS_COMMAND_TIMEOUT_MS = 1000;

/**
 * `command`, failed with a StoreUnavailableError once it has gone unanswered for `ms`: the one
 * timeout of every command the broker sends (see NO_COMMAND_TIMER). node-redis's own stops
 * counting once a command is written, so against a Redis that accepts connections but never
 * answers (frozen, or a black-holed network) every request would hang: with
 * `commandOptions.timeout` and `withCommandOptions`, a GET written to a SIGSTOPped redis-server
 * was still unanswered 30 s later (tried when moving to node-redis 6).
 */
export function bounded<T>(command: Promise<T>, ms = REDIS_COMMAND_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`Redis did not answer within ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([command, timeout]).finally(() => clearTimeout(timer));
}

/**
 * No timer of node-redis's own on a command: `bounded` is every command's timeout. node-redis 6
 * arms an `AbortSignal.timeout` (5 s by default) for each command: a timer and a weakly held
 * signal that outlive the answer and reach the old generation, which cost as much CPU as the
 * command itself: two GETEX, 16 in flight, took 17 µs of CPU with it and 8 without; in S6, a call
 * whose session is not cached spent 12 µs collecting garbage with it and 5 without.
 * Set on the clients that send the broker's commands, not on a Cluster's or a Sentinel's node
 * clients, whose own commands (finding the topology) keep node-redis's timeout.
 */
const NO_COMMAND_TIMER = { commandOptions: { timeout: 0 } } as const;

/**
 * Fail fast rather than queue: a command issued while disconnected is rejected at once, so an
 * outage (or a failover) answers 503 quickly, and the client keeps reconnecting. Every command the
 * broker or its libraries send goes through `bounded`.
 */
export const FAIL_FAST = {
  disableOfflineQueue: true,
  socket: {
    connectTimeout: 2000,
    reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2000),
  },
} as const;

/**
 * RESP3 on every connection, and with it server-assisted client-side caching (tracking) of up to
 * `entries` answers kept in process (TrackedAnswers): Redis tells every client that read a key
 * when anyone changes it. 0: no cache.
 */
function cacheOptions(entries: number, pooled: boolean) {
  const config = { maxEntries: entries, evictPolicy: 'LRU', ttl: 0 } as const;
  if (entries === 0) return { RESP: 3 } as const;
  return {
    RESP: 3,
    clientSideCache: pooled ? new TrackedPooledCache(config) : new TrackedCache(config),
  } as const;
}

/** The answers kept for a client's tracked reads, when it has a client-side cache. */
export function trackedAnswers(client: RedisClient): TrackedAnswers | undefined {
  const cache: unknown = client.clientSideCache;
  return cache instanceof TrackedCache || cache instanceof TrackedPooledCache
    ? cache.answers
    : undefined;
}

type Credentials = { username?: string | undefined; password?: string | undefined };

/** A standalone node-redis client, set up to fail fast (credentials in `url` win over `of`'s). */
export function createRedisClient(url: string, cacheEntries = 0, of: Credentials = {}) {
  return createClient({
    url,
    ...credentials(of),
    ...FAIL_FAST,
    ...NO_COMMAND_TIMER,
    ...cacheOptions(cacheEntries, false),
  });
}

const credentials = (of: Credentials) => ({
  ...(of.username === undefined ? {} : { username: of.username }),
  ...(of.password === undefined ? {} : { password: of.password }),
});

/** A client of the master a Sentinel set names, following it through failovers. */
export function createSentinelClient(
  topology: Extract<RedisTopology, { mode: 'sentinel' }>,
  cacheEntries = 0,
) {
  return createSentinel({
    name: topology.masterName,
    sentinelRootNodes: topology.sentinels,
    // One connection to the master: a WAIT sent after a write covers that write. Reserved for the
    // client's life: leased per command instead, two commands that both find no lease held each
    // ask the pool of one for it, and the second waits until no command is in flight at all,
    // which under steady writes (WAITs back to back while a replica is down) outlasted the
    // one-second bound on a read.
    masterPoolSize: 1,
    reserveClient: true,
    nodeClientOptions: { ...FAIL_FAST, ...credentials(topology) },
    ...(topology.sentinelPassword === undefined
      ? {}
      : { sentinelClientOptions: { password: topology.sentinelPassword } }),
    ...NO_COMMAND_TIMER,
    ...cacheOptions(cacheEntries, true),
  });
}

/** A Cluster client: it finds every node from these, and sends each command to its key's slot. */
export function createClusterClient(
  topology: Extract<RedisTopology, { mode: 'cluster' }>,
  cacheEntries = 0,
) {
  return createCluster({
    rootNodes: topology.nodes.map((url) => ({ url })),
    defaults: { ...FAIL_FAST, ...credentials(topology) },
    ...NO_COMMAND_TIMER,
    ...cacheOptions(cacheEntries, true),
  });
}

/** Where the broker's Redis is: one server, a Sentinel-watched master, or a Cluster. */
export type RedisTopology =
  | {
      mode: 'standalone';
      url: string;
      /** REDIS_USERNAME and REDIS_PASSWORD, when the URL holds no credentials of its own. */
      username?: string | undefined;
      password?: string | undefined;
    }
  | {
      mode: 'sentinel';
      masterName: string;
      sentinels: { host: string; port: number }[];
      /** Credentials of the master and replicas (a Sentinel set names hosts, not URLs). */
      username?: string | undefined;
      password?: string | undefined;
      /** The sentinels' own password, when they have one. */
      sentinelPassword?: string | undefined;
    }
  | {
      mode: 'cluster';
      nodes: string[];
      /** Credentials of every node (a URL's own credentials win for that root node). */
      username?: string | undefined;
      password?: string | undefined;
    };

export interface RedisOptions {
  /**
   * Entries of the server-assisted client-side cache (RESP3 tracking): reads of session and
   * connection records are answered in process until Redis says the key changed, on whichever
   * instance changed it. 0 turns it off.
   */
  cacheEntries: number;
}

/** Whether one master answered a PING in time. */
export interface Pinged {
  address: string;
  answered: boolean;
}

/** A PING to one master, bounded, as a Pinged. */
const ping = (address: string, command: () => Promise<unknown>): Promise<Pinged> =>
  command().then(
    () => ({ address, answered: true }),
    () => ({ address, answered: false }),
  );

/** A raw command sent to one node. */
export type Send = (args: string[]) => Promise<unknown>;

/** The broker's Redis, whichever its topology: one command surface, and what differs by mode. */
export interface Redis {
  readonly mode: RedisTopology['mode'];
  readonly client: RedisClient;
  /** A raw command on the node that holds `key` (Cluster), or on the master. */
  sendCommand(key: string | undefined, args: string[]): Promise<unknown>;
  /** One sender per master, for what acts on one node's keyspace: CONFIG GET, SCAN. */
  masters(): Promise<Send[]>;
  /**
   * The master that holds `key`, by address (Cluster: the one serving its slot now), or '' where
   * one master holds every key. What vouches for a cached answer is that this node answers.
   */
  nodeOf(key: string): string;
  /** A PING to every master, each bounded: which answered, by address. */
  pingMasters(bound: <T>(command: Promise<T>) => Promise<T>): Promise<Pinged[]>;
}

/** `master-name@host:port,host:port,…`: the master's name and the sentinels to ask for it. */
export function parseSentinel(value: string): {
  masterName: string;
  sentinels: { host: string; port: number }[];
} {
  const at = value.lastIndexOf('@');
  const masterName = value.slice(0, at).trim();
  if (at <= 0 || masterName === '') throw new Error('must be master-name@host:port[,host:port…]');
  const sentinels = value
    .slice(at + 1)
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(entry);
      const port = Number(match?.[2]);
      if (!match?.[1] || !(port > 0 && port < 65536))
        throw new Error(`has a sentinel address that is not host:port: ${entry}`);
      return { host: match[1].replace(/^\[|\]$/g, ''), port };
    });
  if (sentinels.length === 0) throw new Error('must name at least one sentinel (host:port)');
  return { masterName, sentinels };
}

/** Comma-separated redis:// or rediss:// URLs of some of the Cluster's nodes (it finds the rest). */
export function parseClusterNodes(value: string): string[] {
  const nodes = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (nodes.length === 0) throw new Error('must list at least one node URL');
  for (const node of nodes) {
    const url = URL.parse(node);
    if (!url || !/^rediss?:$/.test(url.protocol) || !url.hostname || !url.port)
      throw new Error(`must be redis://host:port URLs: ${node}`);
  }
  return nodes;
}

/** The client for `topology`, not yet connected. */
export function createRedis(topology: RedisTopology, options: RedisOptions): Redis {
  switch (topology.mode) {
    case 'standalone':
      return standalone(createRedisClient(topology.url, options.cacheEntries, topology));
    case 'sentinel': {
      const client = createSentinelClient(topology, options.cacheEntries);
      return {
        mode: 'sentinel',
        client,
        sendCommand: (_key, args) => client.sendCommand(false, args),
        masters: async () => [(args) => client.sendCommand(false, args)],
        nodeOf: () => '',
        pingMasters: async (bound) => [await ping('', () => bound(client.ping()))],
      };
    }
    case 'cluster': {
      const client = createClusterClient(topology, options.cacheEntries);
      return {
        mode: 'cluster',
        client,
        sendCommand: (key, args) => client.sendCommand(key, false, args),
        masters: () =>
          Promise.all(
            client.masters.map(async (master) => {
              const node = await client.nodeClient(master);
              return (args: string[]) => node.sendCommand(args);
            }),
          ),
        nodeOf: (key) => client.slots[calculateSlot(key)]?.master.address ?? '',
        pingMasters: (bound) =>
          Promise.all(
            client.masters.map((master) =>
              ping(master.address, () =>
                bound(client.nodeClient(master).then((node) => node.ping())),
              ),
            ),
          ),
      };
    }
  }
}

/** A standalone client (connected or not) as the broker's Redis. */
export function standalone(client: ReturnType<typeof createRedisClient>): Redis {
  const send: Send = (args) => client.sendCommand(args);
  return {
    mode: 'standalone',
    client,
    sendCommand: (_key, args) => send(args),
    masters: async () => [send],
    nodeOf: () => '',
    pingMasters: async (bound) => [await ping('', () => bound(client.ping()))],
  };
}

/** Every key matching `match`, on every master (SCAN walks one node's keyspace). */
export async function* scanKeys(redis: Redis, match: string): AsyncGenerator<string> {
  for (const send of await redis.masters()) {
    let cursor = '0';
    do {
      const [next, batch] = (await bounded(
        send(['SCAN', cursor, 'MATCH', match, 'COUNT', '1000']),
      )) as [string, string[]];
      cursor = String(next);
      yield* batch;
    } while (cursor !== '0');
  }
}
