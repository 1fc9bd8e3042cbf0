import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { createAdminUseCases, type AdminService } from './admin/use-cases.ts';
import { readBuildInfo } from './ops/build-info.ts';
import { startBroker } from './compose.ts';
import { ConfigError, loadConfig, type Config } from './config/config.ts';
import { checkDurability, configGetWith } from './ops/durability.ts';
import { startTracing } from './base/tracing.ts';
import { configureServer } from './http/listener.ts';
import { createLogger } from './ops/logger.ts';
import { metricsApp } from './http/metrics-route.ts';
import { createAdminApp } from './http/admin/app.ts';
import { consoleRouter } from './http/admin/console/serve.ts';
import { tokensFromFile } from './http/admin/tokens.ts';
import { createMetrics } from './ops/metrics.ts';
import { createShutdown, createStartUp, StartUpStopped, type StartUp } from './ops/shutdown.ts';
import { bounded, type Redis } from './store/redis/clients.ts';
import { DataFormatError } from './store/format.ts';
import type { Logger } from 'pino';

/**
 * Reads the environment, connects the store, upgrades its data, listens, and stops cleanly on
 * SIGTERM or SIGINT at any point: during start-up it closes what it opened and exits 0; once
 * started, it shuts down gracefully (ops/shutdown.ts) and exits 0.
 */
async function main(): Promise<void> {
  // First of all: from here on a signal stops the start-up at its next stage, never the process
  // outright (which would leave the data format upgrade's lease held for a minute).
  const startUp = createStartUp();
  let shutdown: ((signal: string) => Promise<void>) | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (shutdown) void shutdown(signal).then(() => process.exit(0));
    else startUp.stop(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

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
  try {
    shutdown = await start(config, log, startUp);
  } catch (error) {
    // A store of a later format (store/format.ts): this release cannot serve it, and says so.
    if (error instanceof DataFormatError) {
      log.fatal(error.message);
      log.flush();
      process.exit(1);
    }
    if (!(error instanceof StartUpStopped)) throw error;
    log.info({ signal: error.signal }, 'stopping during start-up: closing what it opened');
    log.flush();
    await startUp.unwind((failed) => log.warn({ err: failed }, 'stopping: a close failed'));
    log.info('stopped');
    log.flush();
    process.exit(0);
  }
}

/**
 * The broker started, stage by stage, each after a check for a signal: tracing, Redis, the data
 * format, events delivery, the app, the metrics listener, and the broker's own listener last, so
 * that /readyz answers once everything runs. Answers the graceful shutdown of what it started.
 */
async function start(
  config: Config,
  log: Logger,
  startUp: StartUp,
): Promise<(signal: string) => Promise<void>> {
  // OTEL_* may ask for traces; off by default, and then the SDK is never loaded.
  const stopTracing = await startTracing(process.env, {
    trustCallerSampling: config.tracing.trustCallerSampling,
  });
  // The spans of the last requests, flushed to the collector.
  const flushTraces = async () => {
    await stopTracing?.().catch(() => undefined);
  };
  startUp.opened(flushTraces);
  if (stopTracing) log.info('tracing on (OpenTelemetry, configured by OTEL_*)');
  startUp.check();

  const metrics = createMetrics(readBuildInfo(import.meta.url));
  const dispatcher = new Agent({ connections: 256, keepAliveTimeout: 10_000 });
  startUp.opened(() => dispatcher.destroy());
  // Redis, its durability said, the data format, events delivery and the app (compose.ts).
  const { redis, store, services, broker, stop } = await startBroker(config, {
    now: Date.now,
    dispatcher,
    log,
    metrics,
    startUp,
    connected: (redis) => reportDurability(redis, log),
  });

  // METRICS_PORT: /metrics alone on a port of its own (behind METRICS_TOKEN too when it is set).
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await listening(
          createServer(metricsApp(metrics, config.metrics.token)),
          config.metrics.port,
          config.listen.host,
          startUp,
        );
  if (metricsServer) {
    const { port: metricsPort } = metricsServer.address() as AddressInfo;
    log.info({ url: `http://${config.listen.host}:${metricsPort}/metrics` }, 'metrics listening');
  }
  // ADMIN_PORT: the admin API and console on a port of their own, never on the public one.
  let admin: AdminService | undefined;
  let adminServer: Server | undefined;
  if (config.admin) {
    admin = createAdminUseCases({
      redis,
      store,
      keyring: config.keyring,
      sessions: services.sessions,
      connections: services.connections,
      events: services.events,
      now: Date.now,
      build: readBuildInfo(import.meta.url),
    });
    const app = createAdminApp({
      useCases: admin,
      tokens: tokensFromFile({
        path: config.admin.tokensFile,
        entries: config.admin.tokens,
        now: Date.now,
        log,
      }),
      log,
      now: Date.now,
      console: consoleRouter(),
    });
    adminServer = await listening(
      configureServer(createServer(app)),
      config.admin.port,
      config.listen.host,
      startUp,
    );
    const { port: adminPort } = adminServer.address() as AddressInfo;
    log.info(
      { url: `http://${config.listen.host}:${adminPort}`, tokens: config.admin.tokens.length },
      'admin API listening',
    );
  }
  const server = await listening(
    configureServer(createServer(broker.app)),
    config.listen.port,
    config.listen.host,
    startUp,
  );
  const { port } = server.address() as AddressInfo;
  log.info(
    {
      url: `http://${config.listen.host}:${port}`,
      publicUrl: config.publicUrl.origin,
      store: redis ? `redis (${redis.mode})` : 'embedded',
    },
    'broker listening',
  );
  // Start-up is done: its lines are out now rather than at the next flush.
  log.flush();

  return createShutdown({
    server,
    setReady: broker.setReady,
    // Refreshes in flight, then the delivery under way (what is left waits in the outbox), and a
    // data format upgrade taken over (its lease let go).
    idle: async () => {
      await broker.tokens.idle();
      // A re-encryption this instance runs pauses, its place saved for a resume.
      await admin?.stop();
      await stop();
    },
    // Nothing is in flight any more, or it was cut off: no outbound request is worth waiting for.
    close: [
      () => dispatcher.destroy(),
      async () => {
        if (metricsServer) await closed(metricsServer);
      },
      async () => {
        if (adminServer) await closed(adminServer);
      },
      () => broker.release().catch(() => undefined),
      () => store.close(),
      flushTraces,
    ],
    log,
    delayMs: config.shutdown.delayMs,
    timeoutMs: config.shutdown.timeoutMs,
  });
}

await main();

/** Every master holds some of the tokens (a Cluster has several): each must keep them. */
async function reportDurability(redis: Redis, log: Logger): Promise<void> {
  for (const send of await redis.masters()) {
    const durability = await checkDurability(configGetWith((args) => bounded(send(args))));
    if (!durability.readable)
      log.warn(
        { reason: durability.reason },
        'could not read Redis durability settings (CONFIG GET); make sure Redis runs with appendonly yes and maxmemory-policy noeviction, or tokens can be lost',
      );
    else if (durability.warnings.length > 0)
      for (const warning of durability.warnings) log.warn({ redis: durability.settings }, warning);
    else log.info({ redis: durability.settings }, 'Redis keeps tokens durably');
  }
}

/** `server` listening on `port`; closed if the start-up stops. */
async function listening(
  server: Server,
  port: number,
  host: string,
  startUp: StartUp,
): Promise<Server> {
  server.listen(port, host);
  startUp.opened(() => closed(server));
  await once(server, 'listening');
  startUp.check();
  return server;
}

async function closed(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
