import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { composeEvents, composeServices } from './compose.ts';
import { createApp } from './http/app.ts';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { checkDurability, configGetWith } from './ops/durability.ts';
import { startTracing, tracingOn } from './base/tracing.ts';
import { tracedStore } from './store/traced.ts';
import { configureServer } from './http/listener.ts';
import { createLogger } from './ops/logger.ts';
import { metricsApp } from './http/metrics-route.ts';
import { createMetrics } from './ops/metrics.ts';
import { createShutdown } from './ops/shutdown.ts';
import { bounded, createRedis } from './store/redis/clients.ts';
import { DataFormatError, upgradeFormat } from './store/format.ts';
import type { Store } from './store/types.ts';
import type { Logger } from 'pino';
import { storeDeps } from './http/stores.ts';

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

  // OTEL_* may ask for traces; off by default, and then the SDK is never loaded.
  const stopTracing = await startTracing(process.env, {
    trustCallerSampling: config.tracing.trustCallerSampling,
  });
  if (stopTracing) log.info('tracing on (OpenTelemetry, configured by OTEL_*)');
  const metrics = createMetrics(buildInfo());
  const redis = config.redis.topology
    ? createRedis(config.redis.topology, { cacheEntries: config.redis.cacheEntries })
    : undefined;
  if (redis) {
    redis.client.on('error', (error: Error) => {
      metrics.redisError();
      log.warn({ err: error }, 'Redis connection error');
    });
    await redis.client.connect();
    // Every master holds some of the tokens (a Cluster has several): each must keep them.
    for (const send of await redis.masters()) {
      const durability = await checkDurability(configGetWith((args) => bounded(send(args))));
      if (!durability.readable)
        log.warn(
          { reason: durability.reason },
          'could not read Redis durability settings (CONFIG GET); make sure Redis runs with appendonly yes and maxmemory-policy noeviction, or tokens can be lost',
        );
      else if (durability.warnings.length > 0)
        for (const warning of durability.warnings)
          log.warn({ redis: durability.settings }, warning);
      else log.info({ redis: durability.settings }, 'Redis keeps tokens durably');
    }
  }
  const stores = storeDeps(redis, {
    onError: metrics.redisError,
    waitReplicas: config.redis.waitReplicas,
    waitTimeoutMs: config.redis.waitTimeoutMs,
    onUnreplicated: (acknowledged) =>
      log.warn(
        { acknowledged, wanted: config.redis.waitReplicas },
        'a write was not acknowledged by enough Redis replicas in time: a failover now could lose it',
      ),
  });
  const store = tracingOn() ? tracedStore(stores.store) : stores.store;
  await upgraded(store, log);
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 10_000 });

  // Events go to an outbox in Redis with the change they report; every instance delivers them.
  const { delivery, events } = composeEvents({ config, store, log, now: Date.now }) ?? {};
  if (delivery) metrics.observeEvents(delivery);
  const services = composeServices({
    config,
    store,
    dispatcher,
    log,
    ...(events ? { events } : {}),
  });
  const broker = createApp({ config, ...stores, store, dispatcher, log, metrics, services });

  const server = configureServer(createServer(broker.app)).listen(
    config.listen.port,
    config.listen.host,
  );
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  log.info(
    {
      url: `http://${config.listen.host}:${port}`,
      publicUrl: config.publicUrl.origin,
      store: redis ? `redis (${redis.mode})` : 'embedded',
    },
    'broker listening',
  );

  // METRICS_PORT: /metrics alone on a port of its own (behind METRICS_TOKEN too when it is set).
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : createServer(metricsApp(metrics, config.metrics.token)).listen(
          config.metrics.port,
          config.listen.host,
        );
  if (metricsServer) {
    await once(metricsServer, 'listening');
    const { port: metricsPort } = metricsServer.address() as AddressInfo;
    log.info({ url: `http://${config.listen.host}:${metricsPort}/metrics` }, 'metrics listening');
  }
  // Start-up is done: its lines are out now rather than at the next flush.
  log.flush();

  const shutdown = createShutdown({
    server,
    setReady: broker.setReady,
    // Refreshes in flight, then the delivery under way (what is left waits in the outbox).
    idle: async () => {
      await broker.tokens.idle();
      await delivery?.stop();
    },
    // Nothing is in flight any more, or it was cut off: no outbound request is worth waiting for.
    close: [
      () => dispatcher.destroy(),
      async () => {
        metricsServer?.closeAllConnections();
        if (metricsServer) await new Promise((resolve) => metricsServer.close(resolve));
      },
      () => broker.release().catch(() => undefined),
      () => store.close(),
      // The spans of the last requests, flushed to the collector.
      async () => {
        await stopTracing?.().catch(() => undefined);
      },
    ],
    log,
    delayMs: config.shutdown.delayMs,
    timeoutMs: config.shutdown.timeoutMs,
  });
  const stop = (signal: string): void => {
    void shutdown(signal).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();

/**
 * What runs: dist/build-info.json, written by the build beside main.js (version and git revision).
 * Run from source there is none: the package's version, and no revision.
 */
function buildInfo(): { version: string; revision: string } {
  const read = (file: string): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(new URL(file, import.meta.url), 'utf8')) as Record<
        string,
        unknown
      >;
    } catch {
      return {};
    }
  };
  const built = read('./build-info.json');
  const version = built.version ?? read('../package.json').version;
  return {
    version: typeof version === 'string' ? version : 'unknown',
    revision: typeof built.revision === 'string' ? built.revision : 'unknown',
  };
}

/**
 * The store brought to this release's data format before anything is served (store/format.ts);
 * a store of a later format stops this broker, saying so.
 */
async function upgraded(store: Store, log: Logger): Promise<void> {
  try {
    const upgrade = await upgradeFormat(store, Date.now);
    if (upgrade.leftToAnother)
      log.info({ format: upgrade.from }, 'another instance is upgrading the data format');
    else if (upgrade.from !== upgrade.to)
      log.warn({ ...upgrade }, 'upgraded the data format of the store');
  } catch (error) {
    if (!(error instanceof DataFormatError)) throw error;
    log.fatal(error.message);
    log.flush();
    process.exit(1);
  }
}
