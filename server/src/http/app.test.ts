import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Agent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { composeServices } from '../compose.ts';
import { createApp } from './app.ts';
import { loadConfig } from '../config/config.ts';
import { createConnectionRepository, type ConnectionRecord } from '../connections/records.ts';
import { createSealer, hashToken, parseKeyring, randomToken } from '../base/crypto.ts';
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
