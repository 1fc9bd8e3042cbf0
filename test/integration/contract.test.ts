import { BROKER_ERROR_HEADER, PROXY_METHODS, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import type { Answer } from '../support/client.ts';
import { answersRecorded, Contract, type Answer as Sent } from '../support/contract.ts';
import { connect, redeem, startFlow, TestBrowser } from '../support/flow.ts';
import { EXTENSION_REDIRECT, useWorld } from '../support/world.ts';

/**
 * The contract test's own walk: every route of docs/openapi.json, and each of its documented
 * answers that the broker can be made to give here. The setup (contract-setup.ts) checks each
 * answer against the document as it leaves the broker; the last test checks that every documented
 * route was seen, and that what was not seen is only what this file says it cannot produce.
 */
const METRICS_TOKEN = 'contract-test-metrics-token-0123456789abcdef';
const world = useWorld(
  { env: { METRICS_TOKEN }, metrics: true },
  { resetSandbox: true, expectNoLeaks: true },
);

const HOUR = 3_600_000;
const unknownToken = () =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = { 'content-type': 'application/json' };
const validVerifier = 'v'.repeat(43);

/** A request from a browser of its own (its own address, so its own rate limits), sent as is. */
function ask(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  from: TestBrowser = new TestBrowser(world),
): Promise<Answer> {
  const cookie = [...from.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  return from.raw(0, method, path, { ...headers, ...(cookie === '' ? {} : { cookie }) }, body);
}

function startUrl(overrides: Record<string, string> = {}): string {
  const query = new URLSearchParams({
    locale: 'nl',
    redirect_uri: EXTENSION_REDIRECT,
    code_challenge: 'c'.repeat(43),
    code_challenge_method: 'S256',
    ...overrides,
  });
  return `${routes.authStart}?${query}`;
}

describe('the operations routes', () => {
  it('/healthz, /readyz ready and shutting down, /metrics with and without its token', async () => {
    expect((await ask('GET', routes.healthz)).status).toBe(200);
    expect((await ask('GET', routes.readyz)).status).toBe(200);
    world.broker.broker.setReady(false);
    try {
      const shutting = await ask('GET', routes.readyz);
      expect([shutting.status, JSON.parse(shutting.body)]).toEqual([
        503,
        { status: 'shutting_down' },
      ]);
    } finally {
      world.broker.broker.setReady(true);
    }
    expect((await ask('GET', routes.metrics, bearer(METRICS_TOKEN))).status).toBe(200);
    expect((await ask('GET', routes.metrics)).status).toBe(404);
  });
});

describe('the authorization window', () => {
  it('checks a redirect URL, starts, and ends a sign-in with the documented cookie', async () => {
    const query = new URLSearchParams({ redirect_uri: EXTENSION_REDIRECT });
    expect((await ask('GET', `${routes.redirectCheck}?${query}`)).status).toBe(200);
    const browser = new TestBrowser(world);
    const flow = await startFlow(world, browser);
    const cookie = Contract.load().document.components.securitySchemes?.authCookie?.name;
    expect([...browser.cookies.keys()]).toEqual([cookie]);
    world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
    const { final } = await browser.navigate(flow.authorizeUrl.href);
    expect(final.searchParams.has('handoff')).toBe(true);
  });

  it('answers its pages: a bad start, and a callback without a sign-in', async () => {
    expect((await ask('GET', startUrl({ locale: 'de' }))).status).toBe(400);
    expect((await ask('GET', `${routes.authCallback}?code=x&state=y`)).status).toBe(400);
  });

  it('limits every /auth route per address with 429', async () => {
    const browser = new TestBrowser(world);
    const check = `${routes.redirectCheck}?redirect_uri=x`;
    for (let i = 0; i < 60; i++) await ask('GET', check, {}, undefined, browser);
    for (const path of [check, startUrl(), routes.authCallback]) {
      const answer = await ask('GET', path, {}, undefined, browser);
      expect([answer.status, answer.headers[BROKER_ERROR_HEADER.toLowerCase()]]).toEqual([
        429,
        'rate_limited',
      ]);
    }
  });
});

describe('the session and its connections', () => {
  it('POST /session: 201, invalid_request, invalid_grant, and 429 past its limit', async () => {
    await connect(world);
    const browser = new TestBrowser(world);
    const statuses = [];
    for (let i = 0; i < 30; i++)
      statuses.push((await ask('POST', routes.session, json, '{}', browser)).status);
    expect(new Set(statuses)).toEqual(new Set([400]));
    expect((await ask('POST', routes.session, json, '{}', browser)).status).toBe(429);
    const unknown = await redeem(world, 'no-such-handoff', validVerifier);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('GET /connections, DELETE /connections/{id} and DELETE /session, with and without a session', async () => {
    const one = await connect(world);
    const token = one.session_token;
    expect((await ask('GET', routes.connections, bearer(token))).status).toBe(200);
    expect((await ask('GET', routes.connections)).status).toBe(401);
    expect((await ask('DELETE', routes.connection('nope'), bearer(token))).status).toBe(404);
    expect((await ask('DELETE', '/connections/%E0', bearer(token))).status).toBe(400);
    expect((await ask('DELETE', routes.connection('nope'))).status).toBe(401);
    expect((await ask('DELETE', routes.connection(one.connection.id), bearer(token))).status).toBe(
      204,
    );
    expect((await ask('DELETE', routes.session)).status).toBe(401);
    expect((await ask('DELETE', routes.session, bearer(token))).status).toBe(204);
  });

  it('answers 429 on every bearer route to an address whose session checks keep failing', async () => {
    const browser = new TestBrowser(world);
    for (let i = 0; i < 30; i++) await ask('GET', routes.connections, {}, undefined, browser);
    for (const [method, path] of [
      ['GET', routes.connections],
      ['DELETE', routes.session],
      ['DELETE', routes.connection('nope')],
    ] as const) {
      const answer = await ask(method, path, bearer(unknownToken()), undefined, browser);
      expect(answer.status, `${method} ${path}`).toBe(429);
    }
  });
});

/** An API call's two forms: the path in the URL's path, or in the query (`?path=`). */
const FORMS = [
  ['the path form', routes.proxy],
  ['the query form', routes.proxyQuery],
] as const;

describe.each(FORMS)('API calls, in %s', (_form, proxy) => {
  it('passes the license API on for every proxied method, and refuses the others', async () => {
    const { session_token: token, connection } = await connect(world);
    expect((await ask('GET', proxy(connection.id, 'users.me'), bearer(token))).status).toBe(200);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const echo = await ask(
        method,
        proxy(connection.id, 'echo/x'),
        {
          ...bearer(token),
          ...json,
        },
        '{"a":1}',
      );
      expect(echo.status, method).toBe(200);
    }
    for (const method of ['HEAD', 'OPTIONS', 'TRACE'])
      expect((await ask(method, proxy(connection.id, 'users.me'))).status, method).toBe(400);
  });

  it.each(PROXY_METHODS)(
    "%s: answers the broker's own errors: a bad path, no session, no connection, a redirect, too many failures",
    async (method) => {
      const { session_token: token, connection } = await connect(world);
      const call = (
        path: string,
        headers: Record<string, string> = bearer(token),
        from?: TestBrowser,
      ) => ask(method, proxy(connection.id, path), headers, undefined, from);
      expect((await call('a%2f..%2fx')).status).toBe(400);
      expect((await call('echo/x', {})).status).toBe(401);
      expect((await ask(method, proxy('nope', 'echo/x'), bearer(token))).status).toBe(404);
      world.sandbox.sandbox.control.addFault({
        target: 'api',
        kind: 'redirect',
        location: 'http://127.0.0.1:9/elsewhere',
        count: 1,
      });
      expect((await call('echo/x')).status).toBe(503);
      const browser = new TestBrowser(world);
      for (let i = 0; i < 30; i++) await call('echo/x', {}, browser);
      expect((await call('echo/x', bearer(token), browser)).status).toBe(429);
    },
  );
});

describe('API calls', () => {
  it('answers 401 reauthorization_required once the provider refuses the refresh', async () => {
    const { session_token: token, connection } = await connect(world);
    const license = world.sandbox.sandbox.accounts[0]!.licenses[0]!.id;
    world.sandbox.sandbox.control.revokeGrant(license);
    world.clock.advance(HOUR);
    const answer = await ask('GET', routes.proxy(connection.id, 'users.me'), bearer(token));
    expect([answer.status, answer.headers[BROKER_ERROR_HEADER.toLowerCase()]]).toEqual([
      401,
      'reauthorization_required',
    ]);
  });
});

describe('with the store down', () => {
  it('every route that needs it answers 503, the authorization window with a page', async () => {
    // A browser that holds a session cookie from before, so that its session is read.
    const browser = new TestBrowser(world);
    await startFlow(world, browser);
    await world.redis.stop();
    try {
      const statuses = [];
      for (const [method, path, body, from] of [
        ['GET', routes.readyz],
        ['GET', routes.connections],
        ['DELETE', routes.session],
        ['DELETE', routes.connection('nope')],
        ['GET', routes.proxy('nope', 'users.me')],
        ['POST', routes.session, JSON.stringify({ handoff: 'h', code_verifier: validVerifier })],
        ['GET', startUrl()],
        ['GET', `${routes.redirectCheck}?redirect_uri=x`, undefined, browser],
        ['GET', `${routes.authCallback}?code=x&state=y`, undefined, browser],
      ] as const) {
        const headers = { ...bearer(unknownToken()), ...(body === undefined ? {} : json) };
        statuses.push((await ask(method, path, headers, body, from)).status);
      }
      expect(statuses).toEqual([503, 503, 503, 503, 503, 503, 503, 503, 503]);
    } finally {
      await world.redis.start();
    }
  });
});

describe('any other route', () => {
  it('answers 404 not_found, for an unknown path and for an unknown method', async () => {
    expect((await ask('GET', '/nope')).status).toBe(404);
    expect((await ask('GET', routes.session)).status).toBe(404);
  });
});

/** Documented answers this file cannot make the broker give, and why. */
const NOT_PRODUCED: [RegExp, string][] = [
  [/ 500$/, 'server_error: an unexpected failure, which no request can cause on purpose'],
  [/^POST \/session 401$/, 'a join that races a sign-out: sign-out-race.test.ts'],
  [
    /^[A-Z]+ \/connections\/\{id\}\/api(?:\/\{path\})? 502$/,
    'upstream_too_large: a license API of its own answering too much, upstream-bounds.test.ts',
  ],
];

describe('docs/openapi.json', () => {
  it('saw every route it documents, and every documented answer but those it cannot produce', () => {
    const recording = answersRecorded()!;
    const documented = recording.contract.documented();
    const unseen = documented.filter((name) => !recording.seen.has(name));
    const unexplained = unseen.filter((name) => !NOT_PRODUCED.some(([only]) => only.test(name)));
    expect(unexplained).toEqual([]);
    // An exemption that no longer applies goes too.
    for (const [only] of NOT_PRODUCED)
      expect(
        unseen.some((name) => only.test(name)),
        `${only}`,
      ).toBe(true);
    const route = (name: string) => name.split(' ').slice(0, 2).join(' ');
    const routesSeen = new Set([...recording.seen].map(route));
    expect([...new Set(documented.map(route))].filter((name) => !routesSeen.has(name))).toEqual([]);
  });
});

describe('the checker', () => {
  const contract = Contract.load();
  /** A conforming GET /connections answer, but for `overrides` (`json`: its body as JSON). */
  const answer = ({ json, ...overrides }: Partial<Sent> & { json?: unknown }): Sent => ({
    method: 'GET',
    url: routes.connections,
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
    body: Buffer.from(JSON.stringify(json ?? { connections: [] })),
    ...overrides,
  });
  const error = (code: string, headers: Record<string, string> = {}) => ({
    json: { error: code, message: 'm' },
    headers: {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      ...headers,
    },
  });

  it('accepts a conforming answer', () => {
    expect(contract.check(answer({})).problems).toEqual([]);
  });

  it.each<[string, Partial<Sent> & { json?: unknown }, string]>([
    [
      'a broker error without Baton-Error',
      { status: 401, ...error('invalid_session') },
      'no Baton-Error header',
    ],
    [
      "a Baton-Error that is not the body's error",
      {
        url: routes.proxy('c', 'users.me'),
        status: 401,
        ...error('invalid_session', { 'baton-error': 'reauthorization_required' }),
      },
      "Baton-Error: reauthorization_required but the body's error is not",
    ],
    [
      'a field the schema does not have',
      { json: { connections: [], more: 1 } },
      'body must NOT have additional properties',
    ],
    [
      'no Cache-Control',
      { headers: { 'content-type': 'application/json' } },
      'no Cache-Control header',
    ],
    ['a status not documented', { status: 418 }, 'status 418 is not documented'],
    [
      'another content type',
      { headers: { 'content-type': 'text/html', 'cache-control': 'no-store' } },
      'content type text/html, not application/json',
    ],
    [
      'a 429 without Retry-After',
      { status: 429, ...error('rate_limited', { 'baton-error': 'rate_limited' }) },
      'no Retry-After header',
    ],
    ['an unknown route that answers', { url: '/nope' }, 'no Baton-Error header'],
    [
      "a JSON error of the authorization window's without Baton-Error",
      {
        url: routes.authStart,
        status: 503,
        ...error('upstream_unavailable', { 'retry-after': '5' }),
      },
      'a JSON answer without Baton-Error',
    ],
    [
      'a marked answer to an API call that is not an error body',
      {
        url: routes.proxy('c', 'users.me'),
        status: 401,
        headers: { 'baton-error': 'invalid_session', 'cache-control': 'no-store' },
        body: Buffer.from('{}'),
      },
      "Baton-Error: invalid_session but the body's error is not",
    ],
  ])('refuses %s', (_name, overrides, problem) => {
    expect(contract.check(answer(overrides)).problems).toContain(problem);
  });

  it("takes an unmarked page of the authorization window's as documented", () => {
    const page = answer({
      url: routes.authStart,
      status: 503,
      headers: { 'content-type': 'text/html', 'cache-control': 'no-store', 'retry-after': '5' },
      body: Buffer.from('<!doctype html>'),
    });
    expect(contract.check(page).problems).toEqual([]);
  });

  it("takes an unmarked answer to an API call as the license API's, whatever its status", () => {
    const passed = answer({
      url: routes.proxy('c', 'deep/path/users.me?x=1'),
      status: 401,
      headers: { 'content-type': 'text/plain', 'cache-control': 'no-store' },
      body: Buffer.from('no'),
    });
    expect(contract.check(passed)).toEqual({
      matched: 'GET /connections/{id}/api/{path} default',
      problems: [],
    });
  });
});
