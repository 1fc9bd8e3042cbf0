import { routes } from '@baton/shared';
import { Pool } from 'undici';
import { beforeEach, describe, expect, it } from 'vitest';
import { loopbackAddress } from '../support/client.ts';
import { added, stored } from '../support/inspect.ts';
import { keysWithoutTtl } from '../support/ledger.ts';
import { EXTENSION_REDIRECT } from '../support/world.ts';
import { timed } from '../support/wait.ts';
import { ledger, verdict, suite } from './shared.ts';

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const valid = {
  locale: 'fr',
  redirect_uri: EXTENSION_REDIRECT,
  code_challenge: CHALLENGE,
  code_challenge_method: 'S256',
};
const HOST = new URL(EXTENSION_REDIRECT).host;

/** /auth/start with these parameters, in this order (repeats allowed). */
function startPath(params: [string, string][]): string {
  return `${routes.authStart}?${new URLSearchParams(params).toString()}`;
}
const withRedirect = (redirect: string): [string, string][] =>
  Object.entries({ ...valid, redirect_uri: redirect });

/** Extension redirects that are not the allowed one, many of them open-redirect tricks. */
const REDIRECTS: [string, string][] = [
  ['a foreign https URL', 'https://evil.test/'],
  ['a protocol-relative URL', '//evil.test/'],
  ['slash-backslash', '/\\evil.test/'],
  ['two backslashes', '\\\\evil.test'],
  ['a path only', '/'],
  ['a look-alike suffix', `https://${HOST}.evil.test/`],
  ['a look-alike prefix', `https://evil${HOST}/`],
  ['the allowed URL inside a foreign path', `https://evil.test/${EXTENSION_REDIRECT}`],
  ['userinfo naming the allowed host', `https://${HOST}@evil.test/`],
  ['a tab inside the host', `https://test-ext\tension.chromiumapp.org/`],
  ['a newline inside the host', `https://test-ext\nension.chromiumapp.org/`],
  ['a trailing tab', `${EXTENSION_REDIRECT}\t`],
  ['CR/LF and a header', `${EXTENSION_REDIRECT}\r\nLocation: https://evil.test/`],
  ['an upper-case host', EXTENSION_REDIRECT.toUpperCase()],
  ['no trailing slash', EXTENSION_REDIRECT.slice(0, -1)],
  ['an extra path', `${EXTENSION_REDIRECT}evil`],
  ['a query', `${EXTENSION_REDIRECT}?next=https://evil.test/`],
  ['a fragment', `${EXTENSION_REDIRECT}#https://evil.test/`],
  ['an explicit port', `https://${HOST}:443/`],
  ['http instead of https', EXTENSION_REDIRECT.replace('https:', 'http:')],
  ['percent-encoded whole', encodeURIComponent(EXTENSION_REDIRECT)],
  ['an encoded slash before userinfo', `https://${HOST}%2F@evil.test/`],
  ['an encoded dot', `https://${HOST}%2eevil.test/`],
  ['a fullwidth full stop', `https://test-extension\uff0echromiumapp.org/`],
  ['a trailing dot on the host', `https://${HOST}./`],
  ['javascript:', 'javascript:alert(document.domain)'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
  ['chrome-extension:', 'chrome-extension://abcdefghijklmnopabcdefghijklmnop/'],
  ['an 8 KB URL', `${EXTENSION_REDIRECT}${'a'.repeat(8192)}`],
  ['empty', ''],
];

const POLLUTED: [string, [string, string][]][] = [
  [
    'the allowed redirect, then a foreign one',
    [...Object.entries(valid), ['redirect_uri', 'https://evil.test/']],
  ],
  [
    'a foreign redirect, then the allowed one',
    [['redirect_uri', 'https://evil.test/'], ...Object.entries(valid)],
  ],
  [
    'redirect_uri[] (array form)',
    [
      ...Object.entries(valid).filter(([name]) => name !== 'redirect_uri'),
      ['redirect_uri[]', EXTENSION_REDIRECT],
    ],
  ],
  [
    '__proto__[redirect_uri] instead of redirect_uri',
    [
      ...Object.entries(valid).filter(([name]) => name !== 'redirect_uri'),
      ['__proto__[redirect_uri]', EXTENSION_REDIRECT],
    ],
  ],
  ['missing redirect_uri', Object.entries(valid).filter(([name]) => name !== 'redirect_uri')],
  ['two locales', [...Object.entries(valid), ['locale', 'nl']]],
  ['two challenges', [...Object.entries(valid), ['code_challenge', CHALLENGE.replace('E', 'F')]]],
  ['plain then S256', [['code_challenge_method', 'plain'], ...Object.entries(valid)]],
  [
    'constructor[prototype][locale]',
    [
      ...Object.entries(valid).filter(([name]) => name !== 'locale'),
      ['constructor[prototype][locale]', 'fr'],
    ],
  ],
];

export function describeStart(): void {
  describe('hostile extension redirects at /auth/start', () => {
    it.each(REDIRECTS.map(([name, redirect], index) => ({ name, redirect, index })))(
      '$name: a 400 page, no redirect anywhere, no session stored',
      async ({ name, redirect, index }) => {
        const { cluster } = suite;
        const client = cluster.client();
        const before = await stored(cluster.redis.url);
        try {
          const response = await client.fetch(startPath(withRedirect(redirect)), {
            via: index % 3,
          });
          const body = await response.text();
          const after = await stored(cluster.redis.url);
          verdict(`redirect_uri: ${name}`, {
            'a 400': response.status === 400,
            'no Location': response.headers.get('location') === null,
            'no session cookie': response.headers.get('set-cookie') === null,
            'the value is not echoed': !body.includes('evil.test'),
            'no session stored': added(before, after, ['authSessions']).length === 0,
          });
        } finally {
          await client.close();
        }
      },
    );
  });

  describe('parameter pollution at /auth/start', () => {
    it.each(POLLUTED.map(([name, params], index) => ({ name, params, index })))(
      '$name: a 400 page, no redirect, no session stored',
      async ({ name, params, index }) => {
        const { cluster } = suite;
        const client = cluster.client();
        const before = await stored(cluster.redis.url);
        try {
          const response = await client.fetch(startPath(params), { via: index % 3 });
          await response.text();
          const after = await stored(cluster.redis.url);
          verdict(`start pollution: ${name}`, {
            'a 400': response.status === 400,
            'no Location': response.headers.get('location') === null,
            'no session stored': added(before, after, ['authSessions']).length === 0,
          });
        } finally {
          await client.close();
        }
      },
    );
  });

  describe('rate limits at /auth/start under 10,000 requests from one address', () => {
    beforeEach(() => {
      suite.cluster.control.reset();
    });

    /**
     * `total` GET /auth/start from one loopback address, spread over the instances on keep-alive
     * connections, `concurrency` at a time; every other one with a made-up X-Forwarded-For when
     * `spoof`. Counts answers by status.
     */
    async function flood(total: number, spoof: 'none' | 'half' | 'all') {
      const { cluster } = suite;
      const address = loopbackAddress();
      const pools = cluster.brokers.map(
        (broker) => new Pool(broker.url, { connections: 16, localAddress: address }),
      );
      const path = startPath(Object.entries(valid));
      const statuses = new Map<number, number>();
      let missingRetryAfter = 0;
      let next = 0;
      const worker = async () => {
        for (let index = next++; index < total; index = next++) {
          const spoofed = spoof === 'all' || (spoof === 'half' && index % 2 === 1);
          const response = await pools[index % pools.length]!.request({
            path,
            method: 'GET',
            headers: spoofed
              ? { 'x-forwarded-for': `10.${index % 250}.${(index >> 8) % 250}.${index % 7}` }
              : {},
          });
          await response.body.dump();
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
          if (response.statusCode === 429 && response.headers['retry-after'] === undefined)
            missingRetryAfter++;
        }
      };
      const before = await stored(cluster.redis.url);
      const { ms } = await timed(() => Promise.all(Array.from({ length: 48 }, worker)));
      const after = await stored(cluster.redis.url);
      await Promise.all(pools.map((pool) => pool.close()));
      return {
        ms,
        accepted: statuses.get(302) ?? 0,
        limited: statuses.get(429) ?? 0,
        other: total - (statuses.get(302) ?? 0) - (statuses.get(429) ?? 0),
        missingRetryAfter,
        sessionsAdded: added(before, after, ['authSessions']).length,
      };
    }

    it('10,000 requests, half with a spoofed X-Forwarded-For, over three instances: 60 get through, the rest 429 with Retry-After', async () => {
      const result = await flood(10_000, 'half');
      console.log(`10,000 /auth/start in ${Math.round(result.ms)} ms`);
      ledger.hostile('rate limit: 10,000 /auth/start from one address', result.accepted > 60);
      expect(result).toMatchObject({
        accepted: 60,
        limited: 9_940,
        other: 0,
        missingRetryAfter: 0,
      });
      // One pending authorization session per accepted start, none for the refused ones.
      expect(result.sessionsAdded).toBeLessThanOrEqual(60);
    });

    it('a spoofed X-Forwarded-For on every request buys no budget of its own', async () => {
      const result = await flood(1_000, 'all');
      ledger.hostile(
        'rate limit: 1,000 /auth/start, each with another X-Forwarded-For',
        result.accepted > 60,
      );
      expect(result).toMatchObject({ accepted: 60, limited: 940, other: 0 });
    });

    it('every key in Redis still carries a TTL', async () => {
      expect(await keysWithoutTtl(suite.cluster.redis.url)).toEqual([]);
    });

    it('POST /session is limited too: 100 attempts from one address, at most 30 are read', async () => {
      const client = suite.cluster.client();
      try {
        const statuses = await Promise.all(
          Array.from({ length: 100 }, async (_, index) => {
            const response = await client.fetch(routes.session, {
              via: index % 3,
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ handoff: 'x'.repeat(43), code_verifier: 'v'.repeat(43) }),
            });
            await response.text();
            return response.status;
          }),
        );
        const read = statuses.filter((status) => status === 400).length;
        ledger.hostile('rate limit: 100 POST /session from one address', read > 30);
        expect(read).toBe(30);
        expect(statuses.filter((status) => status === 429)).toHaveLength(70);
      } finally {
        await client.close();
      }
    });
  });
}
