import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import createClient from 'openapi-fetch';
import { beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../support/flow.ts';
import type { paths } from '../support/openapi-types.ts';
import { OPENAPI_TYPES_PATH, renderOpenApiTypes } from '../support/openapi-types.render.ts';
import { useWorld } from '../support/world.ts';
import { HOSTILE_PATHS } from '../support/hostile-paths.ts';

/**
 * A client of the broker generated from docs/openapi.json the way an integrator would
 * (openapi-typescript's types, openapi-fetch), calling the license API's nested paths. A generic
 * client percent-encodes a path parameter's `/`, which the path form (`/api/{path}`) rightly
 * refuses, so the document offers the query form (`/api?path=`), which the broker treats exactly
 * as the path form: the same checks, the same limits, the same upstream request.
 */
const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

let token: string;
let id: string;
beforeAll(async () => {
  const session = await connect(world);
  token = session.session_token;
  id = session.connection.id;
});

const apiUrl = () => `/licenses/${world.sandbox.sandbox.accounts[0]!.licenses[0]!.id}`;
const upstream = () => world.control.requests();
const client = () =>
  createClient<paths>({
    baseUrl: world.broker.url,
    headers: { authorization: `Bearer ${token}` },
  });

/** A request sent as is, for targets that fetch() would normalise. */
function raw(method: string, target: string) {
  return new Promise<{ status: number; mark: string | undefined }>((resolve, reject) => {
    const { port } = new URL(world.broker.url);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target,
        headers: { authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          const mark = res.headers[BROKER_ERROR_HEADER.toLowerCase()];
          resolve({ status: res.statusCode!, mark: typeof mark === 'string' ? mark : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('a client generated from docs/openapi.json (openapi-typescript and openapi-fetch)', () => {
  it('is generated from the document as it is now (pnpm --filter @baton/test openapi:types)', async () => {
    expect(await readFile(OPENAPI_TYPES_PATH, 'utf8')).toBe(await renderOpenApiTypes());
  });

  it("calls a nested path of the license API with the query form, and gets the license's answer", async () => {
    const { data, response } = await client().GET('/connections/{id}/api', {
      params: { path: { id }, query: { path: 'echo/invoices/42?status=paid&page=2' } },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get(BROKER_ERROR_HEADER)).toBeNull();
    expect(data).toMatchObject({
      method: 'GET',
      path: `${apiUrl()}/echo/invoices/42`,
      query: 'status=paid&page=2',
    });
    expect(upstream().map((sent) => sent.path)).toEqual([
      `${apiUrl()}/echo/invoices/42?status=paid&page=2`,
    ]);
  });

  it('sends a body with the query form, as with the path form', async () => {
    const { data, response } = await client().POST('/connections/{id}/api', {
      params: { path: { id }, query: { path: 'echo/invoices' } },
      body: { amount: 42 },
    });
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ method: 'POST', body: '{"amount":42}' });
  });

  it('cannot call a nested path with the path form: openapi-fetch encodes its slashes, which the broker refuses', async () => {
    const { error, response } = await client().GET('/connections/{id}/api/{path}', {
      params: { path: { id, path: 'echo/invoices/42' } },
    });
    expect(response.url).toContain('/api/echo%2Finvoices%2F42');
    expect([response.status, error]).toMatchObject([400, { error: 'invalid_request' }]);
    expect(upstream()).toEqual([]);
  });
});

describe('the query form is the path form', () => {
  it('sends the same upstream request, and logs the path without the query', async () => {
    const target = 'echo/a/b.json?x=1&y=%20&z=a/b';
    const byPath = await raw('GET', routes.proxy(id, target));
    const byQuery = await raw('GET', routes.proxyQuery(id, target));
    expect([byPath.status, byQuery.status]).toEqual([200, 200]);
    const [first, second] = upstream();
    expect(second?.path).toBe(first?.path);
    expect(second?.path).toBe(`${apiUrl()}/echo/a/b.json?x=1&y=%20&z=a/b`);
    const logged = world.broker.logs.lines
      .map((line) => JSON.parse(line) as { msg?: string; path?: string })
      .filter((line) => line.msg === 'request completed' && line.path?.endsWith('/api'));
    expect(logged.map((line) => line.path)).toContain(`/connections/${id}/api`);
    expect(world.broker.logs.text).not.toContain('b.json?x=1');
  });

  it.each([
    ['a path longer than 2048 characters', 'a'.repeat(2049)],
    ['the token endpoint', 'oauth2/access_token'],
    ['a dot-dot', '../x'],
  ])('refuses %s in either form, with the same error', async (_name, target) => {
    const byPath = await raw('GET', routes.proxy(id, target));
    const byQuery = await raw('GET', routes.proxyQuery(id, target));
    expect(byQuery).toEqual(byPath);
    expect(byQuery).toEqual({ status: 400, mark: 'invalid_request' });
    expect(upstream()).toEqual([]);
  });

  it.each([
    ['no path', ''],
    ['an empty query', '?'],
    ['path twice', '?path=users.me&path=users.me'],
    ['another parameter beside path', '?path=users.me&x=1'],
    ['an encoded name', '?p%61th=users.me'],
    ['a malformed escape', '?path=%E0'],
    ['a space, as forms encode it', '?path=users+me'],
    ['a fragment', '?path=users.me%23x'],
    ['an encoded line break in the query', '?path=users.me%3Fx%0D%0AHost:evil.test'],
  ])('refuses %s with 400 invalid_request, nothing upstream', async (_name, query) => {
    expect(await raw('GET', `/connections/${id}/api${query}`)).toEqual({
      status: 400,
      mark: 'invalid_request',
    });
    expect(upstream()).toEqual([]);
  });

  it.each(['HEAD', 'OPTIONS', 'TRACE'])(
    'refuses the method %s, as the path form does',
    async (method) => {
      expect(await raw(method, routes.proxyQuery(id, 'users.me'))).toEqual(
        await raw(method, routes.proxy(id, 'users.me')),
      );
      expect(upstream()).toEqual([]);
    },
  );
});

/**
 * The hostile paths of the path form's tests (the hardening suite's proxy attacks), and those only
 * the query form can be sent, each given to it both as a generic client encodes it and as is.
 */
const HOSTILE: [string, string][] = [
  ...HOSTILE_PATHS,
  ['a raw fullwidth solidus', '\uff0f\uff0e\uff0e/_control'],
  ['raw CR/LF', 'users.me\r\nX-Injected: y'],
  ['a 64 KB path', 'a'.repeat(65_536)],
];

describe('the query form, attacked with the path form’s hostile paths', () => {
  it.each(HOSTILE)('%s: a 4xx, nothing upstream', async (_name, path) => {
    const asGenericClientsSendIt = `/connections/${id}/api?path=${encodeURIComponent(path)}`;
    const asIs = `/connections/${id}/api?path=${path.replace(/[^\x21-\x7e]|[#&+]/g, encodeURIComponent)}`;
    for (const target of [asGenericClientsSendIt, asIs]) {
      const { status } = await raw('GET', target).catch(() => ({ status: 0 }));
      // Node's parser refuses request lines over 16 KB: the connection is reset (status 0) or 431.
      expect(path.length > 16_000 ? [0, 414, 431] : [400]).toContain(status);
    }
    expect(upstream()).toEqual([]);
  });
});
