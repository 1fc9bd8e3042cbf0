import { startSandbox, type RunningSandbox } from '@baton/sandbox';
import { brokerEnv } from './broker-env.ts';
import { BrokerProcess } from './process.ts';
import { RedisServer } from './redis.ts';

export const E2E_CLIENT = {
  client_id: 'baton-e2e',
  client_secret: 'sbx_secret_end-to-end-tests-0123456789abcdef',
};

export interface E2eStack {
  redis: RedisServer;
  sandbox: RunningSandbox;
  /** The broker the extension was built for. */
  broker: BrokerProcess;
  /**
   * Another broker on the same Redis and sandbox, on one of `morePorts`. EXTENSION_REDIRECT_URLS:
   * null keeps the development default (the built extension's ids), a string replaces it.
   * The caller stops it.
   */
  startBroker(port: number, extensionRedirectUrls?: string | null): Promise<BrokerProcess>;
  /**
   * Stops `broker` (the extension then finds nothing on its port) and resolves with `start`,
   * which starts it again with the same environment (its keys: it reads what it sealed before)
   * and puts it in `broker`.
   */
  stopBroker(): Promise<{ start(): Promise<BrokerProcess> }>;
  close(): Promise<void>;
}

/**
 * Real Redis, the sandbox (in this process, so the test drives its clock), a broker process; the
 * sandbox also accepts the callbacks of brokers on `morePorts`.
 */
export async function startE2eStack(
  brokerPort: number,
  morePorts: readonly number[] = [],
): Promise<E2eStack> {
  const redis = await RedisServer.start();
  const sandbox = await startSandbox({
    control: true,
    clients: [
      {
        ...E2E_CLIENT,
        redirect_uris: [brokerPort, ...morePorts].map(
          (port) => `http://127.0.0.1:${port}/auth/callback`,
        ),
      },
    ],
  });
  const envFor = (port: number, extensionRedirectUrls: string | null = null) =>
    brokerEnv({
      providerUrl: sandbox.url,
      publicUrl: `http://127.0.0.1:${port}`,
      redis: { REDIS_URL: redis.url },
      client: { id: E2E_CLIENT.client_id, secret: E2E_CLIENT.client_secret },
      extensionRedirectUrls,
      extra: { PORT: String(port), LOG_LEVEL: 'info' },
    });
  const startBroker = (port: number, extensionRedirectUrls: string | null = null) =>
    BrokerProcess.start(envFor(port, extensionRedirectUrls));
  const env = envFor(brokerPort);
  const stack: E2eStack = {
    redis,
    sandbox,
    broker: await BrokerProcess.start(env),
    startBroker,
    async stopBroker() {
      await stack.broker.stop();
      return {
        start: async () => (stack.broker = await BrokerProcess.start(env)),
      };
    },
    async close() {
      await stack.broker.stop();
      await sandbox.close();
      await redis[Symbol.asyncDispose]();
    },
  };
  return stack;
}
