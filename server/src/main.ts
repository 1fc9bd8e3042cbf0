import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { createApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { configureServer } from './http.ts';
import { createLogger } from './logger.ts';
import { createRedisClient } from './store/redis.ts';
import { storeDeps } from './wiring.ts';

/** Reads the environment, connects the store, listens, and shuts down gracefully on SIGTERM. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
  const log = createLogger(config.logLevel);
  if (config.developmentDefaults.length > 0) {
    log.warn(
      { defaults: config.developmentDefaults },
      'DEVELOPMENT SETUP: these values fall back to insecure development defaults pointing at the provider sandbox; never deploy like this',
    );
  }

  const redis = config.redisUrl ? createRedisClient(config.redisUrl) : undefined;
  if (redis) {
    redis.on('error', (error: Error) => log.warn({ err: error }, 'Redis connection error'));
    await redis.connect();
  }
  const stores = storeDeps(redis);
  const { store } = stores;
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 10_000 });

  const broker = createApp({ config, ...stores, dispatcher, log });

  const server = configureServer(createServer(broker.app)).listen(config.port, config.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  log.info(
    {
      url: `http://${config.host}:${port}`,
      publicUrl: config.publicUrl.origin,
      store: redis ? 'redis' : 'embedded',
    },
    'broker listening',
  );

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: draining requests');
    broker.setReady(false);
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref());
    await Promise.race([drained, deadline]);
    server.closeAllConnections();
    await dispatcher.close();
    await store.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

await main();
