/**
 * The processes one bench run measures, all on loopback: Redis, the provider sandbox (as its own
 * process: the upstream, baseline a), the bare proxy (baseline b), and broker processes running
 * server/src/main.ts unchanged (B). Sessions are written straight into Redis with the broker's own
 * repository and sealer (the real route is rate limited at 30/min per IP).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { ConnectionRecord } from '../../server/src/connections/records.ts';
import { randomToken } from '../../server/src/base/crypto.ts';
import { createRedisClient } from '../../server/src/store/redis/clients.ts';
import {
  createLogger,
  loadConfig,
  startBroker,
  type Services,
  type StartedBroker,
  type Store,
} from '@baton/server';
// The world's client and broker environment, from broker-env.ts: not world.ts, whose suite
// helper brings vitest into the bench's process.
import { brokerEnv, CLIENT_ID, CLIENT_SECRET } from '../support/broker-env.ts';
import { RedisServer } from '../support/redis.ts';
import { sandboxGrant, type Grant } from '../support/sandbox-grant.ts';
import { BARE_PROXY, BROKER_MAIN, ELD_HOOK, freePort, Proc, SANDBOX_MAIN } from './procs.ts';

export { CLIENT_ID, CLIENT_SECRET, EXTENSION_REDIRECT } from '../support/broker-env.ts';
export const LICENSE = 'lic-1001';

export interface Session {
  token: string;
  sid: string;
  connectionId: string;
  accessToken: string;
}

export class BenchStack {
  readonly logDir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
  readonly key = `bench:${randomBytes(32).toString('base64')}`;
  readonly agent = new Agent({ connections: 64 });
  redis!: RedisServer;
  sandbox!: Proc;
  bare: Proc | undefined;
  brokers: Proc[] = [];
  brokerPorts: number[] = [];
  /** Each broker's environment, as it was started with it. */
  brokerEnvs: Record<string, string>[] = [];
  /** Starts broker i afresh, with the same arguments and environment. */
  brokerStarts: ((nodeArgs?: string[]) => Promise<Proc>)[] = [];
  eldFile = join(this.logDir, 'eld.json');
  redisPid = 0;
  #redisClient!: ReturnType<typeof createRedisClient>;
  /** Broker 0 composed in the bench's process (never listening): its services, its store. */
  #composed!: StartedBroker;
  store!: Store;
  repo!: Services['connections'];
  sessions!: Services['sessions'];

  /**
   * `mains`: each instance's broker entry point (default server/src/main.ts), so that one run can
   * hold brokers of several revisions side by side (compare.ts).
   */
  static async start(
    instances: number,
    options: {
      brokerNodeArgs?: string[];
      mains?: string[];
      /** Node options of each instance (before its entry point). */
      nodeArgs?: string[][];
      /** Environment of each instance, over the bench's own (OTEL_*...). */
      envs?: Record<string, string>[];
      eventLoopHook?: boolean;
    } = {},
  ): Promise<BenchStack> {
    const stack = new BenchStack();
    stack.redis = await RedisServer.start();
    const mainOf = (index: number): string => options.mains?.[index] ?? BROKER_MAIN;
    // Ports free a moment ago, none twice: the kernel may hand a closed one out again at once
    // (the sandbox once got a broker's, and that broker's readiness check was answered by it).
    const ports = new Set<number>();
    while (ports.size < instances + 1) ports.add(await freePort());
    const [sandboxPort, ...brokerPorts] = [...ports] as [number, ...number[]];
    stack.brokerPorts = brokerPorts;
    stack.sandbox = await Proc.start({
      name: 'sandbox',
      args: [SANDBOX_MAIN],
      env: {
        SANDBOX_PORT: String(sandboxPort),
        SANDBOX_CONTROL: '1',
        // A round keeps the upstream busy for 100,000 calls: kept in its request log, they made
        // collections of 10-55 ms in it, which stalled whichever variant was being measured.
        SANDBOX_REQUEST_LOG_LIMIT: '5000',
        SANDBOX_CLIENT_ID: CLIENT_ID,
        SANDBOX_CLIENT_SECRET: CLIENT_SECRET,
        SANDBOX_REDIRECT_URIS: stack.brokerPorts
          .map((port) => `http://127.0.0.1:${port}/auth/callback`)
          .join(','),
      },
      port: sandboxPort,
      logFile: join(stack.logDir, 'sandbox.log'),
      readyPath: '/',
    });
    stack.brokerStarts = stack.brokerPorts.map((port, index) => {
      const args =
        index === 0 && options.eventLoopHook !== false
          ? [...(options.brokerNodeArgs ?? []), '--import', ELD_HOOK, mainOf(index)]
          : [...(options.nodeArgs?.[index] ?? []), mainOf(index)];
      const env = brokerEnv({
        providerUrl: stack.sandbox.url,
        publicUrl: `http://127.0.0.1:${port}`,
        redis: { REDIS_URL: stack.redis.url },
        extra: {
          // One keyring for every broker: what one seals, the others and the bench's own read.
          TOKEN_ENCRYPTION_KEYS: stack.key,
          LOG_LEVEL: 'info',
          TRUST_PROXY: '1',
          // The per-session limit stays on the hot path, set too high to refuse a bench call.
          SESSION_RATE_LIMIT: '10000000',
          PORT: String(port),
          HOST: '127.0.0.1',
          ...(index === 0 ? { BENCH_ELD_FILE: stack.eldFile } : {}),
          ...options.envs?.[index],
        },
      });
      stack.brokerEnvs.push(env);
      return (nodeArgs: string[] = []) =>
        Proc.start({
          name: `broker${index}`,
          measured: true,
          args: [...nodeArgs, ...args],
          env,
          port,
          logFile: join(stack.logDir, `broker${index}.log`),
          readyPath: '/healthz',
        });
    });
    stack.brokers = await Promise.all(stack.brokerStarts.map((start) => start()));
    stack.#redisClient = createRedisClient(stack.redis.url);
    stack.#redisClient.on('error', () => {});
    await stack.#redisClient.connect();
    const info = await stack.#redisClient.info('server');
    stack.redisPid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    // Broker 0 as it composes itself from its configuration, but without the client-side cache:
    // with it, Redis would tell this process of every change the brokers make to what it read,
    // during the measurement too.
    const config = loadConfig(stack.brokerEnvs[0]!);
    stack.#composed = await startBroker(
      { ...config, redis: { ...config.redis, cacheEntries: 0 } },
      { now: Date.now, dispatcher: stack.agent, log: createLogger('warn') },
    );
    stack.store = stack.#composed.store;
    stack.repo = stack.#composed.services.connections;
    stack.sessions = stack.#composed.services.sessions;
    return stack;
  }

  /** The bench's own client of the benchmark's Redis (no client-side cache). */
  get redisClient(): ReturnType<typeof createRedisClient> {
    return this.#redisClient;
  }

  /**
   * The broker's own services (sessions, connection records with their sealer) as broker 0
   * composes them from its configuration, over the bench's Redis: what they write, the brokers
   * read (they share one keyring).
   */
  services(): Services {
    return this.#composed.services;
  }

  /**
   * Stops broker `index` and starts it again, fresh: the same arguments, environment and port, with
   * `nodeArgs` before its own (theirs win where both set a V8 flag: the last one does).
   */
  async restartBroker(index: number, nodeArgs: string[] = []): Promise<Proc> {
    await this.brokers[index]?.stop();
    const broker = await this.brokerStarts[index]!(nodeArgs);
    this.brokers[index] = broker;
    return broker;
  }

  get apiUrl(): string {
    return this.apiUrlOf(LICENSE);
  }

  async control(path: string, body?: unknown): Promise<unknown> {
    const response = await request(`${this.sandbox.url}/_control/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      dispatcher: this.agent,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    if (response.statusCode >= 300) throw new Error(`control ${path}: ${response.statusCode}`);
    return response.body.json();
  }

  /** A license's api_url at the sandbox. */
  apiUrlOf(license: string): string {
    return `${this.sandbox.url}/licenses/${license}`;
  }

  /**
   * A fresh grant at the sandbox: code through scripted consent (set for `license` beforehand),
   * then the code exchange.
   */
  async grant(license = LICENSE): Promise<Grant> {
    return sandboxGrant({
      providerUrl: this.sandbox.url,
      apiUrl: this.apiUrlOf(license),
      redirectUri: `http://127.0.0.1:${this.brokerPorts[0]}/auth/callback`,
      dispatcher: this.agent,
    });
  }

  /** `count` API sessions, each with one connection sealed into Redis by the broker's own code. */
  async createSessions(count: number): Promise<Session[]> {
    await this.control('consent', { mode: 'approve', licenseId: LICENSE });
    const out: Session[] = [];
    const batch = 16;
    for (let start = 0; start < count; start += batch) {
      const made = await Promise.all(
        Array.from({ length: Math.min(batch, count - start) }, async () => {
          const tokens = await this.grant();
          const { token, sid } = await this.sessions.create();
          const record: ConnectionRecord = {
            id: randomToken(16),
            apiUrl: this.apiUrl,
            status: 'connected',
            connectedAt: Date.now(),
            tokens,
          };
          if (!(await this.repo.save(sid, record, 0))) throw new Error('could not save');
          return { token, sid, connectionId: record.id, accessToken: tokens.accessToken };
        }),
      );
      out.push(...made);
    }
    return out;
  }

  /** Mark a connection's access token as expired in its sealed record (the refresh token stays). */
  async expire(session: Session): Promise<void> {
    const loaded = await this.repo.load(session.sid, session.connectionId);
    if (!loaded?.record.tokens) throw new Error('connection lost its tokens');
    const record = {
      ...loaded.record,
      tokens: { ...loaded.record.tokens, expiresAt: Date.now() - 1000 },
    };
    if (!(await this.repo.save(session.sid, record, loaded.version)))
      throw new Error('could not expire the record');
  }

  /** The bare proxy (baseline b), with `nodeArgs` before its entry point; a running one is replaced. */
  async startBare(
    fixedToken: string,
    nodeArgs: string[] = [],
    env: Record<string, string> = {},
  ): Promise<void> {
    await this.bare?.stop();
    const port = await freePort();
    this.bare = await Proc.start({
      name: 'bare',
      measured: true,
      args: [...nodeArgs, BARE_PROXY],
      env: {
        PORT: String(port),
        UPSTREAM_API_URL: this.apiUrl,
        UPSTREAM_TOKEN: fixedToken,
        ...env,
      },
      port,
      logFile: join(this.logDir, 'bare.log'),
      readyPath: '/healthz',
    });
  }

  async close(): Promise<void> {
    await this.#composed?.stop();
    await this.store?.close();
    if (this.#redisClient?.isOpen) await this.#redisClient.close();
    for (const broker of this.brokers) await broker.stop();
    await this.bare?.stop();
    await this.sandbox?.stop();
    await this.agent.close();
    await this.redis?.[Symbol.asyncDispose]();
  }
}
