import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectVia } from '../support/client.ts';
import { connect, TestBrowser } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

/**
 * A license API that answers too much or too slowly, on an allowlisted origin: in front of the
 * sandbox (which still runs the token endpoint), serving a few hostile paths of its own.
 */
const MAX = 1024 * 1024;
let hostile: Server;
let origin = '';
const sockets = { cut: 0, closed: 0 };

beforeAll(async () => {
  hostile = createServer((req, res) => {
    const path = req.url ?? '';
    req.on('close', () => {
      if (!res.writableEnded) sockets.cut++;
    });
    if (path.endsWith('/announced')) {
      // Says up front it is larger than the broker passes on.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MAX + 1) });
      res.write('{');
      return;
    }
    if (path.endsWith('/grows')) {
      // Chunked, so it can only be told by counting.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const more = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
      return;
    }
    if (path.endsWith('/trickles')) {
      // A byte now and then, each well within undici's per-wait timeouts: only a deadline ends it.
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (path.endsWith('/silent')) return; // never answers
    if (path.endsWith('/closes-once') || path.endsWith('/closes')) {
      // Closes the connection on the call, as a server whose keep-alive timeout just ran out.
      if (path.endsWith('/closes') || sockets.closed === 0) {
        sockets.closed++;
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"again":true}');
      return;
    }
    const target = new URL(world.sandbox.url);
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  hostile.listen(0, '127.0.0.1');
  await once(hostile, 'listening');
  origin = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
  alsoAllowed.push(origin);
});

afterAll(async () => {
  hostile.closeAllConnections();
  await new Promise((resolve) => hostile.close(resolve));
});

/** Filled in once the hostile API listens, before the world starts (hooks run in order). */
const alsoAllowed: string[] = [];
const world = useWorld(
  { env: { PROXY_MAX_ANSWER_BYTES: String(MAX), PROXY_TIMEOUT_MS: '600' }, alsoAllowed },
  { resetSandbox: true, expectNoLeaks: true },
);

async function hostileConnection() {
  const client = new TestBrowser(world);
  world.sandbox.sandbox.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
  const session = await connectVia(client, {
    start: 0,
    callback: 0,
    redeem: 0,
    apiUrl: `${origin}/licenses/lic-1001`,
  });
  await client.close();
  return session;
}

const get = (session: { token: string; id: string }, path: string) =>
  fetch(new URL(routes.proxy(session.id, path), world.broker.url), {
    headers: { authorization: `Bearer ${session.token}` },
  });

describe('a license API that answers too much or too slowly', () => {
  it('an answer announced larger than PROXY_MAX_ANSWER_BYTES is refused before its headers, with Baton-Error', async () => {
    const session = await hostileConnection();
    const answer = await get(session, 'announced');
    expect(answer.status).toBe(502);
    expect(answer.headers.get(BROKER_ERROR_HEADER)).toBe('upstream_too_large');
    expect(await answer.json()).toMatchObject({ error: 'upstream_too_large' });
  });

  it('an answer that grows past it is cut: the client never gets it whole, and the upstream is let go', async () => {
    const session = await hostileConnection();
    const answer = await get(session, 'grows');
    expect(answer.status).toBe(200);
    await expect(answer.arrayBuffer()).rejects.toThrow();
    await expect.poll(() => sockets.cut).toBeGreaterThan(0);
  });

  it('an answer that trickles is cut at PROXY_TIMEOUT_MS, however often its bytes come', async () => {
    const session = await hostileConnection();
    const answer = await get(session, 'trickles');
    expect(answer.status).toBe(200);
    await expect(answer.text()).rejects.toThrow();
  });

  it('an API that never answers gets 503 upstream_unavailable at PROXY_TIMEOUT_MS', async () => {
    const session = await hostileConnection();
    const answer = await get(session, 'silent');
    expect(answer.status).toBe(503);
    expect(answer.headers.get(BROKER_ERROR_HEADER)).toBe('upstream_unavailable');
  });

  it('a GET whose connection the API closed under it is sent once more, on a fresh one', async () => {
    const session = await hostileConnection();
    sockets.closed = 0;
    const answer = await get(session, 'closes-once');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ again: true });
    expect(sockets.closed).toBe(1);
  });

  it('a POST is never sent twice: 503 upstream_unavailable when its connection closes under it', async () => {
    const session = await hostileConnection();
    sockets.closed = 0;
    const answer = await fetch(new URL(routes.proxy(session.id, 'closes'), world.broker.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(answer.status).toBe(503);
    expect(answer.headers.get(BROKER_ERROR_HEADER)).toBe('upstream_unavailable');
    expect(sockets.closed).toBe(1);
    // A GET is sent twice at most.
    sockets.closed = 0;
    expect((await get(session, 'closes')).status).toBe(503);
    expect(sockets.closed).toBe(2);
  });

  it('the token endpoint under api_url is no API path: refused, and never reached', async () => {
    const { session_token: token, connection } = await connect(world);
    const before = world.sandbox.sandbox.control.requests().length;
    for (const path of ['oauth2/access_token', 'OAuth2/access_token', 'oauth%32/access_token']) {
      const answer = await fetch(new URL(routes.proxy(connection.id, path), world.broker.url), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=refresh_token',
      });
      expect(answer.status).toBe(400);
      expect(answer.headers.get(BROKER_ERROR_HEADER)).toBe('invalid_request');
    }
    expect(world.sandbox.sandbox.control.requests().slice(before)).toEqual([]);
  });
});
