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
  broker: BrokerProcess;
  close(): Promise<void>;
}

/** Real Redis, the sandbox (in this process, so the test drives its clock), a broker process. */
export async function startE2eStack(brokerPort: number): Promise<E2eStack> {
  const redis = await RedisServer.start();
  const sandbox = await startSandbox({
    control: true,
    clients: [{ ...E2E_CLIENT, redirect_uris: [`http://127.0.0.1:${brokerPort}/auth/callback`] }],
  });
  // EXTENSION_REDIRECT_URLS keeps its development default: the built extension's stable ids.
  const broker = await BrokerProcess.start(
    brokerEnv({
      providerUrl: sandbox.url,
      publicUrl: `http://127.0.0.1:${brokerPort}`,
      redis: { REDIS_URL: redis.url },
      client: { id: E2E_CLIENT.client_id, secret: E2E_CLIENT.client_secret },
      extensionRedirectUrls: null,
      extra: { PORT: String(brokerPort), LOG_LEVEL: 'info' },
    }),
  );
  return {
    redis,
    sandbox,
    broker,
    async close() {
      await broker.stop();
      await sandbox.close();
      await redis[Symbol.asyncDispose]();
    },
  };
}
