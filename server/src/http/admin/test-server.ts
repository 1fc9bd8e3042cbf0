/**
 * The admin app on a real socket for the unit tests, with a fake of the use cases, a clock the
 * test moves, and every log line kept. Only tests import it.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createAdminApp, type AdminAppDeps } from './app.ts';
import { fakeUseCases, type FakeUseCases } from './fake-use-cases.ts';
import { newAdminToken } from './tokens.ts';

export interface TestAdmin {
  url: string;
  useCases: FakeUseCases;
  operator: string;
  viewer: string;
  lines: string[];
  clock: { now: number };
  /** A call with the operator's (default), the viewer's or no token. */
  call(
    path: string,
    init?: {
      method?: string;
      token?: string | null;
      body?: string;
      headers?: Record<string, string>;
    },
  ): Promise<Response>;
  close(): Promise<void>;
}

export async function startTestAdmin(extra: Partial<AdminAppDeps> = {}): Promise<TestAdmin> {
  const operator = newAdminToken('olivia', 'operator');
  const viewer = newAdminToken('victor', 'viewer');
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const clock = { now: 1_000_000 };
  const useCases = fakeUseCases();
  const app = createAdminApp({
    useCases,
    tokens: [operator.entry, viewer.entry],
    log: pino({ level: 'info' }, sink),
    now: () => clock.now,
    ...extra,
  });
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    useCases,
    operator: operator.token,
    viewer: viewer.token,
    lines,
    clock,
    call(path, init = {}) {
      const token = init.token === undefined ? operator.token : init.token;
      return fetch(`${url}${path}`, {
        method: init.method ?? 'GET',
        headers: {
          ...(token === null ? {} : { authorization: `Bearer ${token}` }),
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...init.headers,
        },
        ...(init.body === undefined ? {} : { body: init.body }),
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
