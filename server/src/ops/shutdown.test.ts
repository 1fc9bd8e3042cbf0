import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
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
});
