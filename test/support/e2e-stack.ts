import { randomBytes } from 'node:crypto';
import { startSandbox, type RunningSandbox } from '@baton/sandbox';
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
  const broker = await BrokerProcess.start({
    PORT: String(brokerPort),
    AUTH_URL: sandbox.url,
    API_URL_ALLOWLIST: sandbox.url,
    CLIENT_ID: E2E_CLIENT.client_id,
    CLIENT_SECRET: E2E_CLIENT.client_secret,
    SESSION_SECRET: `e2e-session-secret-${randomBytes(16).toString('hex')}`,
    TOKEN_ENCRYPTION_KEYS: `e2e:${randomBytes(32).toString('base64')}`,
    REDIS_URL: redis.url,
    LOG_LEVEL: 'info',
    // The steps run seconds apart on the real clock, and step 5 needs the 401 right after step
    // 4's refresh to refresh (and so find the revoked grant): no refresh budget here. The
    // integration suite pins the budget on the injected clock.
    REFRESH_MIN_INTERVAL_SECONDS: '0',
  });
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
