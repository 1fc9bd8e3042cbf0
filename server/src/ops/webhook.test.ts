import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebhook } from './webhook.ts';

const event = { id: 'msg_1', type: 'session.ended', body: '{}', at: 0 } as never;
let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

async function receiver(handle: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handle).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
}

const webhook = (url: string) =>
  createWebhook({ url, secrets: [Buffer.alloc(32, 1)], fetch, now: () => 0, timeoutMs: 2000 });

describe('a delivery that got no answer', () => {
  it('says why by the network error code, so that repeated failures of one event can be traced', async () => {
    const url = await receiver((req) => req.on('end', () => req.socket.destroy()).resume());
    expect(await webhook(url).post(event)).toEqual({
      ok: false,
      outcome: 'TypeError (UND_ERR_SOCKET)',
    });
  });

  it('names a refused connection as such, and nothing of the URL', async () => {
    const url = await receiver(() => {});
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    const answer = await webhook(`${url}?token=secret`).post(event);
    expect(answer).toEqual({ ok: false, outcome: 'TypeError (ECONNREFUSED)' });
  });
});
