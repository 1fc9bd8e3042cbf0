import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DataFormatError } from '../store/format.ts';
import { StoreUnavailableError } from '../store/types.ts';
import { createShutdown, createStartUp, StartUpStopped } from './shutdown.ts';

const log = pino({ level: 'silent' });
let server: Server;

afterEach(() => {
  server.closeAllConnections();
  server.close();
});

async function listening(): Promise<Server> {
  server = createServer((_req, res) => res.end()).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

describe('createShutdown', () => {
  it('is not ready first, and closes the store only once the refreshes in flight are done', async () => {
    const steps: string[] = [];
    let finishRefreshes!: () => void;
    const refreshes = new Promise<void>((resolve) => (finishRefreshes = resolve));
    const shutdown = createShutdown({
      server: await listening(),
      setReady: (ready) => steps.push(`ready:${ready}`),
      idle: () => refreshes.then(() => void steps.push('refreshes done')),
      close: [async () => void steps.push('dispatcher'), async () => void steps.push('store')],
      log,
      delayMs: 0,
      timeoutMs: 60_000,
      sleep: () => new Promise<void>(() => {}),
    });
    const done = shutdown('SIGTERM');
    expect(shutdown('SIGTERM')).toBe(done);
    await once(server, 'close');
    expect(steps).toEqual(['ready:false']);
    finishRefreshes();
    await done;
    expect(steps).toEqual(['ready:false', 'refreshes done', 'dispatcher', 'store']);
  });

  it('cuts off what has not finished by timeoutMs, then still closes everything', async () => {
    const closed: string[] = [];
    const sleeps: number[] = [];
    await createShutdown({
      server: await listening(),
      setReady: () => {},
      idle: () => new Promise<void>(() => {}),
      close: [
        async () => {
          throw new Error('dispatcher already closed');
        },
        async () => void closed.push('store'),
      ],
      log,
      delayMs: 250,
      timeoutMs: 1000,
      sleep: async (ms) => void sleeps.push(ms),
    })('SIGTERM');
    expect(sleeps).toEqual([250, 1000]);
    expect(closed).toEqual(['store']);
  });
});

describe('createStartUp', () => {
  it('goes on while no signal has come', () => {
    const startUp = createStartUp();
    expect(() => startUp.check()).not.toThrow();
    expect(startUp.signal.aborted).toBe(false);
  });

  it('once a signal came, stops at the next check, naming it, and closes what was opened, last first', async () => {
    const startUp = createStartUp();
    const closed: string[] = [];
    startUp.opened(() => void closed.push('redis'));
    startUp.opened(async () => {
      throw new Error('the upgrade already let go of it');
    });
    startUp.opened(async () => void closed.push('metrics listener'));
    startUp.stop('SIGTERM');
    startUp.stop('SIGINT');
    expect(startUp.signal.aborted).toBe(true);
    expect(() => startUp.check()).toThrow(StartUpStopped);
    expect(() => startUp.check()).toThrow('start-up stopped by SIGTERM');
    const failed: unknown[] = [];
    await startUp.unwind((error) => failed.push(error));
    expect(closed).toEqual(['metrics listener', 'redis']);
    expect(failed).toEqual([new Error('the upgrade already let go of it')]);
  });

  it('cuts a step under way short at the signal (connecting to a Redis that does not answer)', async () => {
    const startUp = createStartUp();
    expect(await startUp.step(Promise.resolve('connected'))).toBe('connected');
    const connecting = startUp.step(new Promise<never>(() => {}));
    startUp.stop('SIGTERM');
    await expect(connecting).rejects.toThrow(StartUpStopped);
    await expect(startUp.step(Promise.resolve('late'))).rejects.toThrow(
      'start-up stopped by SIGTERM',
    );
  });
  it('waits for a store that is down (Redis loading its dataset), and for nothing else', async () => {
    const waits: number[] = [];
    const startUp = createStartUp({ wait: async (ms) => void waits.push(ms) });
    const loading = new StoreUnavailableError('Redis did not answer', {
      cause: new Error('LOADING Redis is loading the dataset in memory'),
    });
    let asked = 0;
    const told: number[] = [];
    const format = await startUp.whileStoreDown(
      async () => {
        if (++asked <= 7) throw loading;
        return '2';
      },
      (_error, ms) => told.push(ms),
    );
    expect(format).toBe('2');
    expect(waits).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    expect(told).toEqual(waits);
    await expect(
      startUp.whileStoreDown(
        async () => {
          throw new DataFormatError('the store holds data of format 3');
        },
        () => expect.fail('no wait'),
      ),
    ).rejects.toThrow(DataFormatError);
  });

  it('stops waiting for the store at a signal', async () => {
    // The wait under way when SIGTERM comes, as a real one (a timer) is.
    const startUp = createStartUp({
      wait: (_ms, signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', reject, { once: true });
          setImmediate(() => startUp.stop('SIGTERM'));
        }),
    });
    const waited = startUp.whileStoreDown(
      async () => {
        throw new StoreUnavailableError('Redis did not answer');
      },
      () => {},
    );
    await expect(waited).rejects.toThrow('start-up stopped by SIGTERM');
  });
});
