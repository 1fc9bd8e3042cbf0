import { beforeEach, describe, expect, it } from 'vitest';
import { consent, startAuth, type Client } from '../support/client.ts';
import { added, stored } from '../support/inspect.ts';
import { EXTENSION_REDIRECT } from '../support/world.ts';
import { verdict, suite } from './shared.ts';

const LICENSE = 'lic-1001';
const INVALID_API_URL = `${EXTENSION_REDIRECT}?error=invalid_api_url`;
const INVALID_STATE = `${EXTENSION_REDIRECT}?error=invalid_state`;

const tokenRequests = () =>
  suite.cluster.control.requests().filter((request) => request.target === 'token').length;

type Mutation = (callback: URL) => void;
/** `{S}` the sandbox origin, `{SP}` its port, `{A}`/`{AP}` the attacker's, `{P}` a license path, `{L}` `{S}{P}`. */
function expand(template: string): string {
  const { sandbox, attacker } = suite.cluster;
  return template
    .replaceAll('{L}', '{S}{P}')
    .replaceAll('{SP}', String(sandbox.port))
    .replaceAll('{AP}', String(attacker.port))
    .replaceAll('{S}', sandbox.url)
    .replaceAll('{A}', attacker.origin)
    .replaceAll('{P}', `/licenses/${LICENSE}`);
}
const setApiUrl =
  (value: string): Mutation =>
  (callback) => {
    callback.searchParams.set('api_url', expand(value));
  };

/**
 * Hostile api_url values, each given with a valid state and code. A value that a lax check would
 * accept reaches either the sandbox (a token request it counts) or the attacker (a connection it
 * counts), so a wrong "yes" shows up whichever way it goes.
 */
function apiUrlCases(): [string, Mutation][] {
  const values: [string, string][] = [
    // Foreign hosts and ports
    ['a foreign host', 'http://evil.test{P}'],
    ['the attacker origin', '{A}{P}'],
    ['an allowed host on another port', 'http://127.0.0.1:{AP}{P}'],
    ['an allowed wildcard host on another port', 'https://eu.api.example.test:8443{P}'],
    ['an explicit default port', 'https://eu.api.example.test:443{P}'],
    ['a port with a leading zero', 'http://127.0.0.1:0{SP}{P}'],
    ['a port out of range', 'http://127.0.0.1:{SP}0000{P}'],
    // Scheme downgrade and look-alikes of the wildcard entry
    ['http where only https is allowed', 'http://eu.api.example.test{P}'],
    ['a look-alike suffix', 'https://eu.api.example.test.evil.test{P}'],
    ['the wildcard base as a suffix of another host', 'https://api.example.test.evil.test{P}'],
    ['a host merely ending in the base', 'https://evilapi.example.test{P}'],
    ['the wildcard base itself', 'https://api.example.test{P}'],
    ['two labels under the wildcard', 'https://a.b.api.example.test{P}'],
    ['a literal star label', 'https://*.api.example.test{P}'],
    ['a label starting with a hyphen', 'https://-eu.api.example.test{P}'],
    ['a trailing dot', 'https://eu.api.example.test.{P}'],
    ['an upper-case host', 'https://EU.API.EXAMPLE.TEST{P}'],
    ['a Cyrillic homograph', 'https://eu.api.ex\u0430mple.test{P}'],
    ['fullwidth letters', 'https://\uff45\uff55.api.example.test{P}'],
    ['ideographic full stops', 'https://eu\u3002api\u3002example\u3002test{P}'],
    // Userinfo
    ['userinfo naming the allowed origin', '{S}@127.0.0.1:{AP}{P}'],
    ['userinfo naming the wildcard host', 'https://eu.api.example.test@127.0.0.1:{AP}{P}'],
    ['user and password on the allowed origin', 'http://user:pass@127.0.0.1:{SP}{P}'],
    ['an empty userinfo', 'http://@127.0.0.1:{SP}{P}'],
    // Separators smuggled inside
    ['a fragment', '{L}#x'],
    ['a fragment hiding another host', '{L}#@127.0.0.1:{AP}'],
    ['an empty fragment', '{L}#'],
    ['a query', '{L}?x=1'],
    ['a query hiding another host', '{S}?@127.0.0.1:{AP}{P}'],
    ['a backslash before userinfo', 'http://127.0.0.1:{AP}\\@127.0.0.1:{SP}{P}'],
    ['a backslash in the path', '{S}\\licenses\\lic-1001'],
    ['an encoded slash', '{S}/licenses%2flic-1001'],
    ['an upper-case encoded slash', '{S}/licenses%2Flic-1001'],
    ['encoded slashes climbing out', '{L}%2f..%2f..%2f_control'],
    ['an encoded backslash', '{S}/licenses%5clic-1001'],
    ['an encoded NUL in the path', '{L}%00'],
    ['an encoded NUL in the host', 'http://127.0.0.1%00.evil.test:{SP}{P}'],
    ['a double-encoded slash', '{S}/licenses%252flic-1001'],
    ['CR/LF with a header after it', '{L}\r\nHost: evil.test'],
    ['a bare LF', '{L}\nx'],
    ['a tab', '{L}\tx'],
    ['a leading space', ' {L}'],
    ['dot-dot segments', '{S}/licenses/../_control/secrets'],
    ['encoded dot-dot segments', '{S}/licenses/%2e%2e/_control/secrets'],
    ['a dot segment', '{S}/./licenses/lic-1001'],
    ['a double slash naming another host', '{S}//127.0.0.1:{AP}{P}'],
    // IP literals in every notation, all meaning the sandbox's own address
    ['a short IPv4 (127.1)', 'http://127.1:{SP}{P}'],
    ['a hexadecimal IPv4', 'http://0x7f000001:{SP}{P}'],
    ['a dotted hexadecimal IPv4', 'http://0x7f.0.0.1:{SP}{P}'],
    ['a decimal IPv4', 'http://2130706433:{SP}{P}'],
    ['an octal IPv4', 'http://0177.0.0.1:{SP}{P}'],
    ['zero-padded octets', 'http://127.000.000.001:{SP}{P}'],
    ['a percent-encoded IPv4', 'http://%31%32%37.0.0.1:{SP}{P}'],
    ['an IPv4-mapped IPv6', 'http://[::ffff:127.0.0.1]:{SP}{P}'],
    ['an IPv4-mapped IPv6 in hex', 'http://[::ffff:7f00:1]:{SP}{P}'],
    ['a long-form IPv4-mapped IPv6', 'http://[0:0:0:0:0:ffff:127.0.0.1]:{SP}{P}'],
    ['the IPv6 loopback', 'http://[::1]:{SP}{P}'],
    ['localhost', 'http://localhost:{SP}{P}'],
    ['0.0.0.0', 'http://0.0.0.0:{SP}{P}'],
    // Other schemes and shapes
    ['ftp', 'ftp://127.0.0.1:{SP}{P}'],
    ['file', 'file:///etc/passwd'],
    ['javascript', 'javascript:alert(document.cookie)//'],
    ['data', 'data:text/html,<script>alert(1)</script>'],
    ['ws', 'ws://127.0.0.1:{SP}{P}'],
    ['gopher', 'gopher://127.0.0.1:{SP}/_POST'],
    ['an upper-case scheme', 'HTTP://127.0.0.1:{SP}{P}'],
    ['a protocol-relative URL', '//127.0.0.1:{AP}{P}'],
    ['a bare path', '{P}'],
    ['a scheme without slashes', 'http:127.0.0.1:{SP}{P}'],
    ['a scheme with one slash', 'http:/127.0.0.1:{SP}{P}'],
    ['an 8 KB value', `{L}/${'a'.repeat(8192)}`],
    ['an empty value', ''],
  ];
  const good = '{L}';
  const evil = '{A}{P}';
  return [
    ...values.map(([name, value]): [string, Mutation] => [name, setApiUrl(value)]),
    [
      'two api_url parameters, the allowed one first',
      (callback) => {
        callback.searchParams.set('api_url', expand(good));
        callback.searchParams.append('api_url', expand(evil));
      },
    ],
    [
      'two api_url parameters, the foreign one first',
      (callback) => {
        callback.searchParams.set('api_url', expand(evil));
        callback.searchParams.append('api_url', expand(good));
      },
    ],
    [
      'api_url[]= (array form)',
      (callback) => {
        callback.searchParams.delete('api_url');
        callback.searchParams.set('api_url[]', expand(good));
      },
    ],
    [
      'api_url[0]= (indexed form)',
      (callback) => {
        callback.searchParams.delete('api_url');
        callback.searchParams.set('api_url[0]', expand(good));
      },
    ],
    ['missing', (callback) => callback.searchParams.delete('api_url')],
  ];
}

/** One authorization across the cluster with the callback changed by `mutate`. */
async function probe(index: number, mutate: Mutation, client?: Client) {
  const { cluster } = suite;
  const own = client ?? cluster.client();
  const attackerBefore = cluster.attacker.connections;
  const before = await stored(cluster.redis.url);
  try {
    const flow = await startAuth(own, index % 3);
    const callback = await consent(flow);
    mutate(callback);
    const { final, response } = await own.navigate(callback, (index + 1) % 3);
    const after = await stored(cluster.redis.url);
    return {
      final: final.href,
      status: response?.status,
      tokenRequests: tokenRequests(),
      attacker: cluster.attacker.connections - attackerBefore,
      added: added(before, after),
    };
  } finally {
    if (!client) await own.close();
  }
}

export function describeCallback(): void {
  describe('hostile api_url at the callback (state and code valid)', () => {
    beforeEach(() => {
      suite.cluster.control.reset();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
    });

    it('the unmodified callback exchanges once, whichever instance answers (the harness can tell)', async () => {
      const result = await probe(0, () => {});
      expect(result.final).toMatch(/\?handoff=[A-Za-z0-9_-]{43}$/);
      expect(result.tokenRequests).toBe(1);
      expect(result.added).toHaveLength(1);
    });

    const cases = apiUrlCases();
    it(`tries ${cases.length} hostile values`, () => {
      expect(cases.length).toBeGreaterThanOrEqual(40);
    });

    it.each(cases.map(([name, mutate], index) => ({ name, mutate, index })))(
      '$name: invalid_api_url, no exchange, no attacker contact, nothing stored',
      async ({ name, mutate, index }) => {
        const result = await probe(index, mutate);
        verdict(`api_url: ${name}`, {
          'redirects with invalid_api_url': result.final === INVALID_API_URL,
          'the sandbox saw no token request': result.tokenRequests === 0,
          'the attacker saw nothing': result.attacker === 0,
          'nothing was stored': result.added.length === 0,
        });
      },
    );
  });

  describe('hostile state at the callback, across instances', () => {
    beforeEach(() => {
      suite.cluster.control.reset();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
    });

    const mutations: [string, Mutation][] = [
      ['missing', (url) => url.searchParams.delete('state')],
      ['empty', (url) => url.searchParams.set('state', '')],
      ['random', (url) => url.searchParams.set('state', 'A'.repeat(43))],
      [
        'truncated',
        (url) => url.searchParams.set('state', url.searchParams.get('state')!.slice(1)),
      ],
      ['extended', (url) => url.searchParams.set('state', `${url.searchParams.get('state')!}A`)],
      [
        'case-changed',
        (url) => url.searchParams.set('state', url.searchParams.get('state')!.toUpperCase()),
      ],
      [
        'padded with a space',
        (url) => url.searchParams.set('state', ` ${url.searchParams.get('state')!}`),
      ],
      ['repeated', (url) => url.searchParams.append('state', url.searchParams.get('state')!)],
      ['repeated with another value', (url) => url.searchParams.append('state', 'other')],
      [
        'in array form',
        (url) => {
          const state = url.searchParams.get('state')!;
          url.searchParams.delete('state');
          url.searchParams.set('state[]', state);
        },
      ],
      [
        'valid, but with an error parameter next to the code',
        (url) => url.searchParams.set('error', 'access_denied'),
      ],
    ];

    it.each(mutations.map(([name, mutate], index) => ({ name, mutate, index })))(
      '$name: no exchange, nothing stored, the browser is sent back with an error',
      async ({ name, mutate, index }) => {
        const result = await probe(index, mutate);
        verdict(`state: ${name}`, {
          'ends with an error, never a handoff':
            result.final.startsWith(`${EXTENSION_REDIRECT}?error=`) ||
            (result.status !== undefined && result.status >= 400 && result.status < 500),
          'the sandbox saw no token request': result.tokenRequests === 0,
          'nothing was stored': result.added.length === 0,
        });
      },
    );

    it('from another browser session: invalid_state, and the victim can still finish its own flow', async () => {
      const { cluster } = suite;
      const victim = cluster.client();
      const attacker = cluster.client();
      try {
        const attackerCallback = await consent(await startAuth(attacker, 0));
        const victimFlow = await startAuth(victim, 1);
        await startAuth(victim, 2); // a second pending flow, so the wrong state gets a redirect
        const { final } = await victim.navigate(attackerCallback, 2);
        const requests = tokenRequests();
        verdict('state: from another session', {
          invalid_state: final.href === INVALID_STATE,
          'no exchange': requests === 0,
        });
        const own = await victim.navigate(await consent(victimFlow), 0);
        expect(own.final.searchParams.get('handoff')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      } finally {
        await victim.close();
        await attacker.close();
      }
    });

    it("with another browser's cookie: invalid_state, no exchange", async () => {
      const { cluster } = suite;
      const victim = cluster.client();
      const attacker = cluster.client();
      try {
        const victimCallback = await consent(await startAuth(victim, 0));
        await startAuth(attacker, 1);
        const { final, response } = await attacker.navigate(victimCallback, 2);
        verdict("state: with another browser's cookie", {
          'an error, never a handoff':
            final.href.startsWith(`${EXTENSION_REDIRECT}?error=`) || response?.status === 400,
          'no exchange': tokenRequests() === 0,
        });
      } finally {
        await victim.close();
        await attacker.close();
      }
    });

    it.each([
      ['without any cookie', undefined],
      ['with a forged, unsigned cookie', 'baton.auth=s%3Aforged.signature'],
      ['with a cookie signed by nobody', 'baton.auth=s%3AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.xyz'],
    ])('%s: a 400 page, no exchange', async (name, cookie) => {
      const { cluster } = suite;
      const client = cluster.client();
      try {
        const callback = await consent(await startAuth(client, 0));
        const response = await client.fetch(callback, {
          via: 1,
          cookies: false,
          ...(cookie ? { headers: { cookie } } : {}),
        });
        verdict(`state: ${name}`, {
          'a 400 page': response.status === 400 && response.headers.get('location') === null,
          'no exchange': tokenRequests() === 0,
        });
      } finally {
        await client.close();
      }
    });

    it('replayed on another instance after it succeeded: invalid_state, one exchange in all', async () => {
      const client = suite.cluster.client();
      try {
        const flow = await startAuth(client, 0);
        await startAuth(client, 0);
        const callback = await consent(flow);
        const first = await client.navigate(callback, 1);
        expect(first.final.searchParams.get('handoff')).toBeTruthy();
        const replays = await Promise.all([0, 1, 2].map((via) => client.navigate(callback, via)));
        verdict('state: replayed after success on every instance', {
          'every replay is refused': replays.every(
            ({ final, response }) =>
              final.href.startsWith(`${EXTENSION_REDIRECT}?error=`) || response?.status === 400,
          ),
          'one exchange in all': tokenRequests() === 1,
        });
      } finally {
        await client.close();
      }
    });

    it('fired at all three instances at once (nine times): exactly one exchange and one handoff', async () => {
      const client = suite.cluster.client();
      const before = await stored(suite.cluster.redis.url);
      try {
        const flow = await startAuth(client, 0);
        const callback = await consent(flow);
        const results = await Promise.all(
          Array.from({ length: 9 }, (_, index) => client.navigate(callback, index % 3)),
        );
        const handoffs = results.filter(({ final }) => final.searchParams.has('handoff'));
        const after = await stored(suite.cluster.redis.url);
        verdict('state: nine concurrent callbacks across instances', {
          'exactly one handoff': handoffs.length === 1,
          'exactly one exchange': tokenRequests() === 1,
          'one handoff stored': added(before, after, ['handoffs']).length === 1,
        });
      } finally {
        await client.close();
      }
    });

    it('after 10 minutes (injected clock, three instances): no exchange', async () => {
      const { trio } = suite;
      trio.control.reset();
      trio.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      const client = trio.client();
      try {
        const old = await startAuth(client, 0);
        const callback = await consent(old);
        trio.clock.advance(9 * 60_000);
        await startAuth(client, 1); // still within its 10 minutes: the browser has a live flow
        trio.clock.advance(60_000);
        const { final } = await client.navigate(callback, 2);
        verdict('state: after 10 minutes', {
          invalid_state: final.href === INVALID_STATE,
          'no exchange': trio.control.requests().every((request) => request.target !== 'token'),
        });
      } finally {
        await client.close();
      }
    });
  });
}
