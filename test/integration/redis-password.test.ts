import { createRedis, loadConfig } from '@baton/server';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../support/redis.ts';

/** A Redis with a password, as server/compose.yaml runs it, reached with REDIS_PASSWORD_FILE. */
const password = randomBytes(24).toString('hex');
let redis: RedisServer;
let dir: string;

beforeAll(async () => {
  redis = await RedisServer.start({ args: ['--requirepass', password] });
  dir = await mkdtemp(join(tmpdir(), 'baton-secrets-'));
  await writeFile(join(dir, 'redis_password'), `${password}\n`, { mode: 0o600 });
});

afterAll(async () => {
  await redis[Symbol.asyncDispose]();
  await rm(dir, { recursive: true, force: true });
});

/** PONG, or the first error the client met (it keeps reconnecting after a refused handshake). */
async function ping(env: Record<string, string>): Promise<string> {
  const config = loadConfig({ REDIS_URL: redis.url, ...env });
  const client = createRedis(config.redis.topology!, { cacheEntries: 0 }).client;
  const refused = new Promise<string>((resolve) =>
    client.once('error', (error: Error) => resolve(error.message)),
  );
  const answered = client.connect().then(async () => String(await client.ping()));
  answered.catch(() => undefined);
  try {
    return await Promise.race([answered, refused]);
  } finally {
    client.destroy();
  }
}

describe('REDIS_URL with REDIS_PASSWORD_FILE', () => {
  it('authenticates with the password read from the file', async () => {
    expect(await ping({ REDIS_PASSWORD_FILE: join(dir, 'redis_password') })).toBe('PONG');
  });

  it('is refused by Redis without it', async () => {
    expect(await ping({})).toMatch(/NOAUTH|Authentication required/);
  });
});
