import { startSandbox, type RunningSandbox } from '@baton/sandbox';
import { afterAll, beforeAll } from 'vitest';
import { RedisServer } from './redis.ts';
import { brokerEnv } from './broker-env.ts';
import { CLIENT_ID, CLIENT_SECRET } from './stack.ts';

export interface BrokerWorld {
  readonly redis: RedisServer;
  readonly sandbox: RunningSandbox;
  /** The environment of a broker process for this world: fresh secrets, then `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
}

/**
 * Real Redis and the sandbox for a test file that runs broker processes, with the sandbox knowing
 * the brokers' callback at `publicUrl`; both are stopped after the file.
 */
export function useBrokerWorld(publicUrl: string): BrokerWorld {
  let redis: RedisServer | undefined;
  let sandbox: RunningSandbox | undefined;
  beforeAll(async () => {
    redis = await RedisServer.start();
    sandbox = await startSandbox({ control: true, clients: [] });
    sandbox.sandbox.control.registerClient({
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      redirect_uris: [`${publicUrl}/auth/callback`],
    });
  });
  afterAll(async () => {
    await sandbox?.close();
    redis?.resume();
    await redis?.[Symbol.asyncDispose]();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the broker world is not started yet');
    return value;
  };
  return {
    get redis() {
      return started(redis);
    },
    get sandbox() {
      return started(sandbox);
    },
    env(extra = {}) {
      return brokerEnv({
        providerUrl: started(sandbox).url,
        publicUrl,
        redis: { REDIS_URL: started(redis).url },
        extra,
      });
    },
  };
}
