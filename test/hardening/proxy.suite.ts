import { routes } from '@baton/shared';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callApi, connectVia, type Client, type Connected } from '../support/client.ts';
import { HOSTILE_PATHS } from '../support/hostile-paths.ts';
import { verdict, suite } from './shared.ts';

const LICENSE = 'lic-2001';

/** Every request the sandbox saw stayed on its own host and under the connection's api_url. */
function upstreamStayedInside(): boolean {
  const host = new URL(suite.cluster.sandbox.url).host;
  return suite.cluster.control
    .requests()
    .every((request) => request.host === host && request.path.startsWith(`/licenses/${LICENSE}/`));
}

/** Raw request lines no HTTP client will send. */
const LINES: [string, (prefix: string) => Buffer][] = [
  [
    'a raw fullwidth solidus',
    (prefix) =>
      Buffer.concat([
        Buffer.from(`GET ${prefix}`),
        Buffer.from('\uff0f\uff0e\uff0e/_control', 'utf8'),
        Buffer.from(' HTTP/1.1\r\n'),
      ]),
  ],
  ['a raw space in the path', (prefix) => Buffer.from(`GET ${prefix}users .me HTTP/1.1\r\n`)],
  ['a raw NUL', (prefix) => Buffer.from(`GET ${prefix}users\0.me HTTP/1.1\r\n`)],
  [
    'an absolute-form target naming another host',
    (prefix) => Buffer.from(`GET http://evil.test${prefix}users.me HTTP/1.1\r\n`),
  ],
  ['a 64 KB path', (prefix) => Buffer.from(`GET ${prefix}${'a'.repeat(65_536)} HTTP/1.1\r\n`)],
];

export function describeProxy(): void {
  describe('the proxy, attacked', () => {
    let client: Client;
    let session: Connected;

    beforeAll(async () => {
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      client = suite.cluster.client();
      session = await connectVia(client);
      return () => client.close();
    });
    beforeEach(() => {
      suite.cluster.control.reset();
    });

    describe('hostile paths through the proxy', () => {
      it('a plain path reaches the sandbox under api_url (the harness can tell)', async () => {
        const response = await client.raw(0, 'GET', routes.proxy(session.id, 'echo/plain'), {
          authorization: `Bearer ${session.token}`,
        });
        expect(response.status).toBe(200);
        expect(suite.cluster.control.requests()).toHaveLength(1);
        expect(upstreamStayedInside()).toBe(true);
      });

      it.each(HOSTILE_PATHS.map(([name, path], index) => ({ name, path, index })))(
        '$name: a 4xx, nothing upstream outside api_url',
        async ({ name, path, index }) => {
          const response = await client.raw(
            index % 3,
            'GET',
            `/connections/${session.id}/api/${path}`,
            {
              authorization: `Bearer ${session.token}`,
            },
          );
          verdict(`proxy path: ${name}`, {
            'a 4xx': response.status >= 400 && response.status < 500,
            'nothing reached the sandbox': suite.cluster.control.requests().length === 0,
            'the attacker saw nothing': suite.cluster.attacker.connections === 0,
          });
        },
      );

      it.each(LINES.map(([name, line], index) => ({ name, line, index })))(
        '$name: refused or dropped, nothing upstream',
        async ({ name, line, index }) => {
          const prefix = `/connections/${session.id}/api/`;
          const request = Buffer.concat([
            line(prefix),
            Buffer.from(
              `Host: 127.0.0.1\r\nAuthorization: Bearer ${session.token}\r\nConnection: close\r\n\r\n`,
            ),
          ]);
          const response = await client.socket(index % 3, request);
          verdict(`proxy request line: ${name}`, {
            'a 4xx, or no answer at all':
              response.status === 0 || (response.status >= 400 && response.status < 500),
            'nothing reached the sandbox': suite.cluster.control.requests().length === 0,
          });
        },
      );

      it('raw CR/LF in the request line splits the request where HTTP does: nothing injected upstream', async () => {
        const prefix = `/connections/${session.id}/api/`;
        const response = await client.socket(
          0,
          `GET ${prefix}users.me\r\nX-Injected: 1\r\nHost: evil.test\r\nAuthorization: Bearer ${session.token}\r\nConnection: close\r\n\r\n`,
        );
        verdict('proxy request line: raw CR/LF', {
          answered: response.status > 0,
          'only the sandbox host, only under api_url': upstreamStayedInside(),
          'no injected header upstream': suite.cluster.control
            .requests()
            .every((request) => request.headers['x-injected'] === undefined),
        });
      });

      it.each([
        ['@evil', '@evil.test/x'],
        ['a path ending in @evil', 'users.me@evil.test'],
        ['a semicolon and @', ';@evil.test/x'],
        ['a query naming another host', 'echo/x?next=//evil.test&url=http://evil.test/'],
        ['an encoded @', '%40evil.test/x'],
      ])('%s: stays under api_url on the sandbox host', async (name, path) => {
        const response = await client.raw(1, 'GET', `/connections/${session.id}/api/${path}`, {
          authorization: `Bearer ${session.token}`,
        });
        verdict(`proxy path: ${name}`, {
          'answered (by the sandbox or the broker)': response.status > 0,
          'only the sandbox host, only under api_url': upstreamStayedInside(),
          'the attacker saw nothing': suite.cluster.attacker.connections === 0,
        });
      });

      it.each(['TRACE', 'TRACK', 'CONNECT', 'OPTIONS', 'HEAD', 'PROPFIND'])(
        'the method %s: refused on every instance, nothing upstream',
        async (method) => {
          const answers = await Promise.all(
            [0, 1, 2].map((via) =>
              client.socket(
                via,
                `${method} ${method === 'CONNECT' ? 'evil.test:443' : routes.proxy(session.id, 'users.me')} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${session.token}\r\nConnection: close\r\n\r\n`,
              ),
            ),
          );
          verdict(`proxy method: ${method}`, {
            'a 4xx on every instance': answers.every(
              (answer) => answer.status >= 400 && answer.status < 500,
            ),
            'nothing reached the sandbox': suite.cluster.control.requests().length === 0,
          });
        },
      );
    });

    describe('hostile headers through the proxy', () => {
      const echoed = () =>
        suite.cluster.control.requests().filter((request) => request.path.includes('/echo/'));

      it.each([
        ["the client's Authorization", {}, 'authorization'],
        ['Cookie', { cookie: 'baton.auth=abc; session=def' }, 'cookie'],
        ['X-Forwarded-For', { 'x-forwarded-for': '10.0.0.1' }, 'x-forwarded-for'],
        ['X-Forwarded-Host', { 'x-forwarded-host': 'evil.test' }, 'x-forwarded-host'],
        ['X-Forwarded-Proto', { 'x-forwarded-proto': 'https' }, 'x-forwarded-proto'],
        ['Forwarded', { forwarded: 'for=10.0.0.1;host=evil.test' }, 'forwarded'],
        ['X-Real-IP', { 'x-real-ip': '10.0.0.1' }, 'x-real-ip'],
        ['X-Original-URL', { 'x-original-url': '/_control/secrets' }, 'x-original-url'],
        ['X-Rewrite-URL', { 'x-rewrite-url': '/_control/secrets' }, 'x-rewrite-url'],
        [
          'X-HTTP-Method-Override',
          { 'x-http-method-override': 'DELETE' },
          'x-http-method-override',
        ],
        ['Proxy-Authorization', { 'proxy-authorization': 'Basic eA==' }, 'proxy-authorization'],
        ['Origin', { origin: 'https://evil.test' }, 'origin'],
        ['Referer', { referer: 'https://evil.test/' }, 'referer'],
      ])('%s never reaches the sandbox', async (name, headers, header) => {
        const sent = Object.values(headers)[0] ?? session.token;
        const response = await client.raw(2, 'GET', routes.proxy(session.id, 'echo/h'), {
          ...headers,
          authorization: `Bearer ${session.token}`,
        });
        const [request] = echoed();
        const upstream = request?.headers[header];
        verdict(`proxy header: ${name}`, {
          'the call went through': response.status === 200,
          'not forwarded':
            header === 'authorization'
              ? typeof upstream === 'string' &&
                /^Bearer sbx_at_/.test(upstream) &&
                !upstream.includes(session.token)
              : upstream === undefined,
          'the value appears nowhere upstream': !JSON.stringify(request?.headers ?? {}).includes(
            sent,
          ),
        });
      });

      it('Connection: close, Authorization (hop-by-hop) leaves the broker to send its own token only', async () => {
        const answers = await Promise.all(
          [0, 1, 2].map((via) =>
            client.socket(
              via,
              `GET ${routes.proxy(session.id, 'echo/hop')} HTTP/1.1\r\nHost: evil.test\r\nAuthorization: Bearer ${session.token}\r\nConnection: close, Authorization, X-Secret\r\nX-Secret: hop\r\nTE: trailers\r\nUpgrade: websocket\r\nKeep-Alive: timeout=5\r\n\r\n`,
            ),
          ),
        );
        const requests = echoed();
        const host = new URL(suite.cluster.sandbox.url).host;
        verdict('proxy header: Connection: close, Authorization', {
          'every call went through': answers.every((answer) => answer.status === 200),
          'three upstream requests': requests.length === 3,
          "the broker's own Bearer token, never the session token": requests.every(
            (request) =>
              /^Bearer sbx_at_/.test(String(request.headers.authorization)) &&
              !JSON.stringify(request.headers).includes(session.token),
          ),
          'no hop-by-hop header or its value': requests.every(
            (request) =>
              request.headers['x-secret'] === undefined &&
              request.headers.te === undefined &&
              request.headers.upgrade === undefined &&
              !JSON.stringify(request.headers).includes('evil.test'),
          ),
          'the Host is the sandbox': requests.every((request) => request.host === host),
        });
      });

      it('an upstream Set-Cookie never reaches the client, on any instance', async () => {
        suite.cluster.control.addFault({
          kind: 'set_cookie',
          cookie: 'tracking=1; Path=/',
          count: 3,
        });
        const answers = await Promise.all([0, 1, 2].map((via) => callApi(client, via, session)));
        verdict('upstream Set-Cookie', {
          'every call went through': answers.every((answer) => answer.status === 200),
          'no Set-Cookie': answers.every((answer) => answer.headers.get('set-cookie') === null),
        });
      });

      it.each([301, 302, 303, 307, 308] as const)(
        'an upstream %i to the attacker is neither followed nor returned',
        async (status) => {
          suite.cluster.control.addFault({
            target: 'api',
            kind: 'redirect',
            status,
            location: `${suite.cluster.attacker.origin}/steal`,
            count: 3,
          });
          const answers = await Promise.all([0, 1, 2].map((via) => callApi(client, via, session)));
          verdict(`upstream redirect ${status}`, {
            'a 503 on every instance': answers.every((answer) => answer.status === 503),
            'no Location': answers.every((answer) => answer.headers.get('location') === null),
            'the attacker saw nothing': suite.cluster.attacker.connections === 0,
          });
        },
      );

      it.each([
        [
          'in the query string',
          (token: string) => ({ path: `?session_token=${token}`, headers: {} }),
        ],
        [
          'as access_token in the query',
          (token: string) => ({ path: `?access_token=${token}`, headers: {} }),
        ],
        [
          'in a cookie',
          (token: string) => ({ path: '', headers: { cookie: `session_token=${token}` } }),
        ],
        [
          'as the auth cookie',
          (token: string) => ({ path: '', headers: { cookie: `baton.auth=${token}` } }),
        ],
        [
          'with a lower-case scheme',
          (token: string) => ({ path: '', headers: { authorization: `bearer ${token}` } }),
        ],
        [
          'with two spaces',
          (token: string) => ({ path: '', headers: { authorization: `Bearer  ${token}` } }),
        ],
        [
          'twice in one header',
          (token: string) => ({
            path: '',
            headers: { authorization: `Bearer ${token}, Bearer ${token}` },
          }),
        ],
        [
          'as Basic credentials',
          (token: string) => ({
            path: '',
            headers: { authorization: `Basic ${Buffer.from(`${token}:`).toString('base64')}` },
          }),
        ],
        [
          'in X-Session-Token',
          (token: string) => ({ path: '', headers: { 'x-session-token': token } }),
        ],
      ])('a session token %s is refused: 401, nothing upstream', async (name, where) => {
        const { path, headers } = where(session.token);
        const response = await client.raw(
          1,
          'GET',
          `${routes.proxy(session.id, 'users.me')}${path}`,
          headers,
        );
        verdict(`session token ${name}`, {
          '401': response.status === 401,
          'nothing reached the sandbox': suite.cluster.control.requests().length === 0,
        });
      });
    });
  });
}
