import { routes } from '@baton/shared';
import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, connect } from '../support/flow.ts';
import { expectNoLeaks } from '../support/leaks.ts';
import { AttackerListener } from '../support/listener.ts';
import { startWorld, type World } from '../support/world.ts';

let world: World;
let token: string;
let id: string;
let attacker: AttackerListener;

beforeAll(async () => {
  world = await startWorld();
  attacker = await AttackerListener.start();
  const session = await connect(world);
  token = session.session_token;
  id = session.connection.id;
});
afterAll(async () => {
  await expectNoLeaks(world);
  await attacker[Symbol.asyncDispose]();
  await world.close();
});
beforeEach(() => {
  world.sandbox.sandbox.control.reset();
});

const control = () => world.sandbox.sandbox.control;
const apiUrl = () => `/licenses/${world.sandbox.sandbox.accounts[0]!.licenses[0]!.id}`;

/**
 * A raw request, for paths that fetch() would normalise before sending. A connection the broker
 * resets before answering (Node's parser refuses request lines over 16 KB) counts as status 0.
 */
function raw(method: string, path: string, headers: Record<string, string> = {}) {
  const { port } = new URL(world.broker.url);
  return new Promise<{ status: number; body: string }>((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { authorization: `Bearer ${token}`, ...headers },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('connect', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, body: '' });
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

describe('/connections/:id/api/<path>', () => {
  it('returns the upstream user record, status and content type, with no-store', async () => {
    const response = await call(world, routes.proxy(id, 'users.me'), token);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const user = (await response.json()) as { email: string };
    expect(user.email).toContain('@');
    const [upstream] = control().requests();
    expect(upstream).toMatchObject({ method: 'GET', path: `${apiUrl()}/users.me` });
  });

  it('carries the security headers an API answer needs, on success and on error', async () => {
    const answers = [
      await call(world, routes.proxy(id, 'users.me'), token),
      await call(world, routes.proxy('nope', 'users.me'), token),
    ];
    for (const response of answers) {
      await response.arrayBuffer();
      expect(Object.fromEntries(response.headers)).toMatchObject({
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none';frame-ancestors 'none'",
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
      });
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('forwards the method, query string and body, and exactly one upstream request', async () => {
    const response = await call(world, routes.proxy(id, 'echo/items?x=1&y=%20'), token, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(response.status).toBe(200);
    const echo = (await response.json()) as { method: string; path: string; body: string };
    expect(echo.method).toBe('POST');
    expect(echo.body).toBe('{"a":1}');
    expect(control().requests()).toHaveLength(1);
    expect(control().requests()[0]!.path).toBe(`${apiUrl()}/echo/items?x=1&y=%20`);
  });

  it("never forwards the client's Authorization, Cookie, X-Forwarded-* or hop-by-hop headers", async () => {
    const response = await raw('GET', routes.proxy(id, 'echo/headers'), {
      cookie: 'baton.auth=abc',
      'x-forwarded-for': '10.0.0.1',
      'x-forwarded-host': 'evil.test',
      connection: 'close, x-secret',
      'x-secret': 'hop',
      'proxy-authorization': 'Basic eA==',
    });
    expect(response.status).toBe(200);
    const echo = JSON.parse(response.body) as { headers: Record<string, string> };
    expect(echo.headers.authorization).toMatch(/^Bearer sbx_at_/);
    expect(echo.headers.authorization).not.toContain(token);
    for (const name of [
      'cookie',
      'x-forwarded-for',
      'x-forwarded-host',
      'x-secret',
      'proxy-authorization',
    ])
      expect(echo.headers[name]).toBeUndefined();
    expect(echo.headers.host).toBe(new URL(world.sandbox.url).host);
  });

  it('never returns an upstream Set-Cookie', async () => {
    control().addFault({ target: 'api', kind: 'set_cookie', cookie: 'tracking=1', count: 1 });
    const response = await call(world, routes.proxy(id, 'users.me'), token);
    expect(response.status).toBe(200);
    expect(response.headers.get('set-cookie')).toBeNull();
  });

  it('never follows or returns an upstream redirect', async () => {
    control().addFault({
      target: 'api',
      kind: 'redirect',
      location: `${attacker.origin}/steal`,
      count: 1,
    });
    const response = await call(world, routes.proxy(id, 'users.me'), token);
    expect(response.status).toBe(503);
    expect(response.headers.get('location')).toBeNull();
    expect(attacker.connections).toBe(0);
  });

  it.each([
    ['a dot-dot', '../oauth2/access_token'],
    ['encoded dots', '%2e%2e/oauth2/access_token'],
    ['double-encoded dots', '%252e%252e/x'],
    ['a protocol-relative path', '/127.0.0.1/x'],
    ['an encoded slash', 'a%2f..%2f..%2fx'],
    ['a backslash', '..\\x'],
    ['a fullwidth solidus', '%EF%BC%8F%EF%BC%8E%EF%BC%8E'],
    ['CR/LF', 'users.me%0d%0aX:%20y'],
    ['a scheme', 'http:%2f%2fevil.test'],
    ['a 64 KB path', 'a'.repeat(65_536)],
  ])('refuses %s before any upstream request', async (_name, path) => {
    const response = await raw('GET', `/connections/${id}/api/${path}`);
    expect(path.length > 16_000 ? [0, 414, 431] : [400]).toContain(response.status);
    expect(control().requests()).toHaveLength(0);
  });

  it.each(['TRACE', 'CONNECT', 'OPTIONS'])('refuses the method %s', async (method) => {
    const response = await raw(method, routes.proxy(id, 'users.me'));
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
    expect(control().requests()).toHaveLength(0);
  });

  it('answers 404 for a connection of another session', async () => {
    const other = await connect(world);
    const response = await call(world, routes.proxy(id, 'users.me'), other.session_token);
    expect(response.status).toBe(404);
  });

  it('refuses a session token given in the query string or a cookie', async () => {
    const inQuery = await fetch(
      `${world.broker.url}${routes.proxy(id, 'users.me')}?session_token=${token}`,
    );
    expect(inQuery.status).toBe(401);
    const inCookie = await fetch(`${world.broker.url}${routes.proxy(id, 'users.me')}`, {
      headers: { cookie: `session_token=${token}` },
    });
    expect(inCookie.status).toBe(401);
  });
});
