import {
  configureServer,
  createLogger,
  createMetrics,
  loadConfig,
  startBroker,
  type BrokerApp,
  type Store,
} from '@baton/server';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { observed } from './contract.ts';
import { LogCapture } from './logs.ts';

/** A broker in the test's process (world.ts starts them: `startWorld`, `world.startBroker`). */
export interface Broker {
  url: string;
  broker: BrokerApp;
  store: Store;
  logs: LogCapture;
  close(): Promise<void>;
}

/**
 * The broker composed as main.ts composes it, from `env` (PUBLIC_URL defaults to its own address),
 * on a real socket, with `now` as its clock: what a test needs to move time without waiting.
 */
export async function startInProcess(
  env: Record<string, string>,
  options: {
    now: () => number;
    metrics?: boolean;
    /** The store as the broker uses it: a test's wrapper around the real one (test/soak's defects). */
    wrapStore?: (store: Store) => Store;
  },
): Promise<Broker> {
  const server: Server = configureServer(createServer());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({ PUBLIC_URL: url, ...env });
  const logs = new LogCapture();
  const log = createLogger(config.logLevel, logs);
  const dispatcher = new Agent();
  // As main.ts does (startBroker): the client-side cache on, so every suite exercises its
  // invalidation; events recorded and delivered on the clock when `env` has EVENTS_WEBHOOK_URL.
  const { redis, store, broker, stop } = await startBroker(config, {
    now: options.now,
    dispatcher,
    log,
    ...(options.metrics ? { metrics: createMetrics() } : {}),
    ...(options.wrapStore ? { wrapStore: options.wrapStore } : {}),
  });
  // Checked against docs/openapi.json where the suite asks for it (contract-setup.ts).
  server.on('request', observed(broker.app));
  let closing: Promise<void> | undefined;
  return {
    url,
    broker,
    store,
    logs,
    // Once: the test may stop a broker of its own before the world stops every one.
    close() {
      closing ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await stop();
        await dispatcher.close();
        if (redis?.client.isOpen) await redis.client.close();
      })();
      return closing;
    },
  };
}
