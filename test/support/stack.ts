import { startSandbox, type RunningSandbox } from '@baton/sandbox';
import {
  composeServices,
  configureServer,
  createApp,
  createDelivery,
  createLogger,
  createOutbox,
  createMetrics,
  createRedis,
  loadConfig,
  storeDeps,
  upgradeFormat,
  type BrokerApp,
  type Store,
} from '@baton/server';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { TestClock } from './clock.ts';
import { observed } from './contract.ts';
import { LogCapture } from './logs.ts';
import { RedisServer } from './redis.ts';

export const EXTENSION_REDIRECT = 'https://test-extension.chromiumapp.org/';
export const CLIENT_ID = 'baton-test';
export const CLIENT_SECRET = 'sbx_secret_integration-tests-0123456789abcdef';
const KEY = Buffer.alloc(32, 7).toString('base64');

export interface Broker {
  url: string;
  broker: BrokerApp;
  store: Store;
  logs: LogCapture;
  close(): Promise<void>;
}

export interface BrokerOptions {
  redis: RedisServer;
  sandbox: RunningSandbox;
  clock: TestClock;
  env?: Record<string, string>;
  tokenTimeoutMs?: number;
  /** Further api_url origins the allowlist accepts (a license API of the test's own). */
  alsoAllowed?: readonly string[];
  /** Prometheus metrics, served at /metrics when `env` sets METRICS_TOKEN. */
  metrics?: boolean;
}

/** A broker of the test's own, on a real socket, over the real Redis, pointing at the sandbox. */
export async function startBroker(options: BrokerOptions): Promise<Broker> {
  const server: Server = configureServer(createServer());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    AUTH_URL: options.sandbox.url,
    CLIENT_ID,
    CLIENT_SECRET,
    PUBLIC_URL: url,
    API_URL_ALLOWLIST: [options.sandbox.url, ...(options.alsoAllowed ?? [])].join(','),
    EXTENSION_REDIRECT_URLS: EXTENSION_REDIRECT,
    SESSION_SECRET: 'integration-tests-session-secret-0123456789',
    TOKEN_ENCRYPTION_KEYS: `test:${KEY}`,
    REDIS_URL: options.redis.url,
    LOG_LEVEL: 'debug',
    ...options.env,
  });
  const logs = new LogCapture();
  const log = createLogger(config.logLevel, logs);
  // As main.ts does: the client-side cache on, so every suite exercises its invalidation.
  const redis = createRedis(
    config.redis.topology ?? { mode: 'standalone', url: options.redis.url },
    {
      cacheEntries: config.redis.cacheEntries,
    },
  );
  redis.client.on('error', () => {});
  await redis.client.connect();
  const stores = storeDeps(redis);
  // As main.ts does: the store brought to this release's data format before anything is served.
  await upgradeFormat(stores.store, options.clock.now);
  const { store } = stores;
  const dispatcher = new Agent();
  // EVENTS_WEBHOOK_URL in `env`: events are recorded and delivered as main.ts does, on the clock.
  const delivery = config.events.webhook
    ? createDelivery({
        ...config.events.webhook,
        store,
        fetch,
        now: options.clock.now,
        log,
        limits: config.events.limits,
      })
    : undefined;
  const events = delivery
    ? createOutbox({
        store,
        now: options.clock.now,
        limits: config.events.limits,
        wake: () => delivery.wake(),
        onFull: (sid) => delivery.trim(sid),
      })
    : undefined;
  delivery?.start();
  const metrics = options.metrics ? createMetrics() : undefined;
  if (delivery) metrics?.observeEvents(delivery);
  const services = composeServices({
    config,
    store: stores.store,
    dispatcher,
    log,
    now: options.clock.now,
    ...(events ? { events } : {}),
    ...(options.tokenTimeoutMs === undefined ? {} : { tokenTimeoutMs: options.tokenTimeoutMs }),
  });
  const broker = createApp({
    config,
    ...stores,
    dispatcher,
    log,
    services,
    ...(metrics ? { metrics } : {}),
  });
  // Checked against docs/openapi.json where the suite asks for it (contract-setup.ts).
  server.on('request', observed(broker.app));
  return {
    url,
    broker,
    store,
    logs,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await delivery?.stop();
      await dispatcher.close();
      if (redis.client.isOpen) await redis.client.close();
    },
  };
}

export interface Stack {
  clock: TestClock;
  redis: RedisServer;
  sandbox: RunningSandbox;
  broker: Broker;
  close(): Promise<void>;
}

/** Redis, the sandbox and one broker, all real, sharing one injected clock. */
export async function startStack(
  options: {
    appendonly?: boolean;
    env?: Record<string, string>;
    revokeOnRefreshReuse?: boolean;
    alsoAllowed?: readonly string[];
    metrics?: boolean;
  } = {},
): Promise<Stack> {
  const clock = new TestClock();
  const redis = await RedisServer.start({ appendonly: options.appendonly ?? false });
  const sandbox = await startSandbox({
    control: true,
    now: clock.now,
    ...(options.revokeOnRefreshReuse ? { revokeOnRefreshReuse: true } : {}),
  });
  const broker = await startBroker({
    redis,
    sandbox,
    clock,
    ...(options.env ? { env: options.env } : {}),
    ...(options.alsoAllowed ? { alsoAllowed: options.alsoAllowed } : {}),
    ...(options.metrics ? { metrics: true } : {}),
  });
  sandbox.sandbox.control.registerClient({
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    redirect_uris: [`${broker.url}/auth/callback`],
  });
  return {
    clock,
    redis,
    sandbox,
    broker,
    async close() {
      await broker.close();
      await sandbox.close();
      await redis[Symbol.asyncDispose]();
    },
  };
}
