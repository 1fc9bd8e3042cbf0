import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Agent } from 'undici';
import type { Store as RateLimitStore } from 'express-rate-limit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { composeServices } from '../compose.ts';
import { createApp } from './app.ts';
import { loadConfig } from '../config/config.ts';
import { createConnectionRepository, type ConnectionRecord } from '../connections/records.ts';
import { createSealer, hashToken, parseKeyring, randomToken } from '../base/crypto.ts';
import { createMetrics } from '../ops/metrics.ts';
import { keys } from '../store/keys.ts';
import { storeDeps } from './stores.ts';

const A = `a:${Buffer.alloc(32, 1).toString('base64')}`;
const B = `b:${Buffer.alloc(32, 2).toString('base64')}`;

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe('a broker whose keyring lacks the key a stored record was sealed under', () => {
  it('answers server_error for that record, says it is not ready, and changes nothing', async () => {
    const stores = storeDeps(undefined);
    // The secrets are given together: a partial set is refused outside production too.
    const config = loadConfig({
      CLIENT_SECRET: 'app-test-client-secret',
      SESSION_SECRET: 'app-test-session-secret-0123456789abcdef',
      TOKEN_ENCRYPTION_KEYS: B,
      LOG_LEVEL: 'silent',
    });
    const dispatcher = new Agent();
    const log = pino({ level: 'silent' });
    const services = composeServices({ config, store: stores.store, dispatcher, log });
    const { app } = createApp({ config, ...stores, dispatcher, log, services });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    close = async () => {
      server.close();
      await dispatcher.close();
    };
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    // A session whose connection was stored while key A was active.
    const token = randomToken(32);
    const sid = hashToken(token);
    await stores.store.set(keys.session(sid), '{}', 60_000);
    const record: ConnectionRecord = {
      id: 'c1',
      apiUrl: config.provider.authUrl,
      status: 'connected',
      connectedAt: 1_000,
      tokens: { accessToken: 'at', refreshToken: 'rt', expiresAt: Date.now() + 3_600_000 },
    };
    await createConnectionRepository(stores.store, createSealer(parseKeyring(A))).save(
      sid,
      record,
      0,
    );
    const before = await stores.store.getVersioned(keys.connection(sid, 'c1'));

    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const call = await fetch(`${url}/connections/c1/api/users.me`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(call.status).toBe(500);
    expect(await call.json()).toMatchObject({ error: 'server_error' });
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'encryption_key_missing' });
    expect(await stores.store.getVersioned(keys.connection(sid, 'c1'))).toEqual(before);
  });
});

describe('GET /metrics on the public port', () => {
  const METRICS_TOKEN = 'm'.repeat(32);
  const scrape = async (env: Record<string, string>) => {
    const stores = storeDeps(undefined);
    const config = loadConfig({ LOG_LEVEL: 'silent', METRICS_TOKEN, ...env });
    const dispatcher = new Agent();
    const log = pino({ level: 'silent' });
    const services = composeServices({ config, store: stores.store, dispatcher, log });
    const metrics = createMetrics();
    const { app } = createApp({ config, ...stores, dispatcher, log, services, metrics });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    close = async () => {
      server.close();
      await dispatcher.close();
    };
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  };

  it('answers the token when METRICS_TOKEN is set and METRICS_PORT is not', async () => {
    const answer = await scrape({});
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('baton_build_info');
  });

  it('answers 404, even to the token, when METRICS_PORT serves it (as in Kubernetes)', async () => {
    const answer = await scrape({ METRICS_PORT: '9464' });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ error: 'not_found', message: 'No such route.' });
  });
});

describe('a rate limiter whose store fails', () => {
  it('lets the call through, and says so in the broker log, not on stderr', async () => {
    const stores = storeDeps(undefined);
    const config = loadConfig({ LOG_LEVEL: 'silent' });
    const dispatcher = new Agent();
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    const services = composeServices({ config, store: stores.store, dispatcher, log });
    const failing: RateLimitStore = {
      increment: () => Promise.reject(new Error('Redis did not answer')),
      decrement: () => Promise.resolve(),
      resetKey: () => Promise.resolve(),
    };
    const { app } = createApp({
      config,
      ...stores,
      dispatcher,
      log,
      services,
      rateLimitStore: () => failing,
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    close = async () => {
      server.close();
      await dispatcher.close();
    };
    const stderr = vi.spyOn(console, 'error');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const answer = await fetch(`${url}/auth/start`, { redirect: 'manual' });
    expect(answer.status).not.toBe(429);
    expect(stderr).not.toHaveBeenCalled();
    const said = lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(said).toContainEqual(
      expect.objectContaining({ level: 40, msg: expect.stringMatching(/error from store/) }),
    );
    stderr.mockRestore();
  });
});
