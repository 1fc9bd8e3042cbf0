import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { storeDeps } from '../../http/stores.ts';
import { isStoreDown } from '../errors.ts';
import { createRedisClient, REDIS_COMMAND_TIMEOUT_MS, standalone } from './clients.ts';

/**
 * Just enough of a Redis to connect to: it answers every command with the same 40-character bulk
 * string (a script's SHA-1, when asked to load one) until it is frozen, then reads and answers
 * nothing, as a SIGSTOPped Redis would.
 */
async function fakeRedis() {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      if (frozen) return;
      // One answer per command: a command is a RESP array, "*<n>" at the start of a line.
      const text = chunk.toString('latin1');
      const commands = text.match(/(?:^|\r\n)\*\d+\r\n/g)?.length ?? 0;
      // The RESP3 handshake (HELLO 3) wants a map; an empty one will do.
      const hello = text.includes('HELLO') ? 1 : 0;
      socket.write(
        '%0\r\n'.repeat(hello) + `$40\r\n${'f'.repeat(40)}\r\n`.repeat(commands - hello),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    freeze() {
      frozen = true;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/**
 * The broker's stores (its own, the session store, the rate limiter) over a client connected to a
 * fake Redis; all closed after the test.
 */
async function storesOnFake() {
  const redis = await fakeRedis();
  cleanup.push(() => redis.close());
  const client = createRedisClient(redis.url);
  client.on('error', () => {});
  await client.connect();
  cleanup.push(async () => {
    client.destroy();
  });
  const { store, sessionStore, rateLimitStore } = storeDeps(standalone(client));
  const limiter = rateLimitStore!('auth:');
  await limiter.init?.({ windowMs: 60_000 } as Parameters<NonNullable<typeof limiter.init>>[0]);
  return { redis, store, sessionStore, limiter };
}

describe('timeouts', () => {
  it("arm no timer of node-redis's own for a command: `bounded` is every command's one timeout", async () => {
    const { store, sessionStore, limiter } = await storesOnFake();
    const timers = vi.spyOn(AbortSignal, 'timeout');
    cleanup.push(async () => timers.mockRestore());

    await store.get('a key');
    await store.set('a key', 'a value', 60_000);
    // The fake's answers are no session and no count: only that the commands went matters here.
    await new Promise<void>((resolve) => sessionStore.get('sid', () => resolve()));
    await Promise.resolve(limiter.get?.('127.0.0.1')).catch(() => undefined);
    expect(timers).not.toHaveBeenCalled();
  });
});

describe('against a Redis that stops answering', () => {
  /** How `work` failed, and how long it took to. */
  async function failure(work: () => Promise<unknown>) {
    const started = performance.now();
    const error = await work().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    return { error, ms: performance.now() - started };
  }

  it('the broker store, the session store and the rate limiter each fail within the bound, as "store down"', async () => {
    const { redis, store, sessionStore, limiter } = await storesOnFake();
    expect(await store.get('answered')).toBe('f'.repeat(40));

    redis.freeze();
    const [fromStore, fromSession, fromLimiter] = await Promise.all([
      failure(() => store.get('never answered')),
      failure(
        () =>
          new Promise<void>((resolve, reject) =>
            sessionStore.get('sid', (error) => (error ? reject(error) : resolve())),
          ),
      ),
      failure(async () => limiter.increment('127.0.0.1')),
    ]);
    const results = { store: fromStore, session: fromSession, rateLimit: fromLimiter };
    for (const [name, { error, ms }] of Object.entries(results)) {
      expect(isStoreDown(error), name).toBe(true);
      expect(ms, name).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS + 500);
    }
  });
});
