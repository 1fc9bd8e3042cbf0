import type { Fault } from '@baton/sandbox';
import { beforeEach, describe, it } from 'vitest';
import { consent, startAuth } from '../support/client.ts';
import { added, stored } from '../support/inspect.ts';
import { EXTENSION_REDIRECT } from '../support/world.ts';
import { verdict, suite } from './shared.ts';

/**
 * Token endpoint answers a broker must not turn into a connection. `issued` is a real access token
 * the sandbox issued before (a canary): an answer that carries it must not carry it into a log.
 */
function answers(issued: string, attacker: string): [string, Fault][] {
  const body = (value: unknown) => ({
    kind: 'token_body' as const,
    body: JSON.stringify(value),
    count: 1,
  });
  const good = {
    token_type: 'Bearer',
    expires_in: 3600,
    access_token: issued,
    refresh_token: issued.replace('sbx_at_', 'sbx_rt_'),
  };
  return [
    [
      'an HTML page',
      {
        kind: 'token_body',
        contentType: 'text/html',
        body: '<html><body>Maintenance</body></html>',
        count: 1,
      },
    ],
    ['an empty object', body({})],
    ['an empty body', { kind: 'token_body', body: '', count: 1 }],
    ['null', body(null)],
    ['an array', body([good])],
    ['expires_in as a string', body({ ...good, expires_in: '3600' })],
    ['a numeric access token', body({ ...good, access_token: 12345 })],
    ['an access token with a CR/LF', body({ ...good, access_token: `${issued}\r\nX-Injected: 1` })],
    ['an access token with a space', body({ ...good, access_token: `${issued} x` })],
    ['an empty refresh token', body({ ...good, refresh_token: '' })],
    ['no refresh token', body({ ...good, refresh_token: undefined })],
    ['token_type mac', body({ ...good, token_type: 'mac' })],
    ['a negative expires_in', body({ ...good, expires_in: -1 })],
    ['a zero expires_in', body({ ...good, expires_in: 0 })],
    ['a fractional expires_in', body({ ...good, expires_in: 3600.5 })],
    ['an absurd expires_in', body({ ...good, expires_in: 1e12 })],
    ['an expires_in of ten years', body({ ...good, expires_in: 315_360_000 })],
    [
      'a 5 MB body',
      { kind: 'token_body', body: `{"access_token":"${'A'.repeat(5 * 1024 * 1024)}"}`, count: 1 },
    ],
    [
      'the bare access token as text',
      { kind: 'token_body', contentType: 'text/plain', body: issued, count: 1 },
    ],
    [
      'form-encoded tokens',
      {
        kind: 'token_body',
        contentType: 'application/x-www-form-urlencoded',
        body: new URLSearchParams({ access_token: issued, token_type: 'Bearer' }).toString(),
        count: 1,
      },
    ],
    [
      'JSON with an unquoted token',
      {
        kind: 'token_body',
        body: `{"token_type":"Bearer","expires_in":3600,"access_token": ${issued}}`,
        count: 1,
      },
    ],
    [
      'a 500 carrying tokens',
      { kind: 'token_body', status: 500, body: JSON.stringify(good), count: 1 },
    ],
    ['a 204', { kind: 'token_body', status: 204, body: '', count: 1 }],
    ...([301, 302, 303, 307, 308] as const).map((status): [string, Fault] => [
      `a ${status} to the attacker`,
      {
        kind: 'redirect',
        target: 'token',
        status,
        location: `${attacker}/oauth2/access_token`,
        count: 1,
      },
    ]),
  ];
}

export function describeTokenAnswers(): void {
  describe('token endpoint answers that are not valid, at the code exchange', () => {
    beforeEach(() => {
      suite.cluster.control.reset();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1002' });
    });

    const names = answers('sbx_at_x', 'http://x').map(([name]) => name);
    it.each(names.map((name, index) => ({ name, index })))(
      '$name: exchange_failed, no connection, nothing stored, the attacker saw nothing',
      async ({ name, index }) => {
        const { cluster } = suite;
        const issued = cluster.control.secrets().findLast((secret) => secret.startsWith('sbx_at_'));
        if (issued === undefined) throw new Error('no access token issued yet to use as a canary');
        const fault = answers(issued, cluster.attacker.origin)[index]![1];
        const client = cluster.client();
        try {
          const callback = await consent(await startAuth(client, index % 3));
          const before = await stored(cluster.redis.url);
          cluster.control.addFault(fault);
          const { final } = await client.navigate(callback, (index + 1) % 3);
          const after = await stored(cluster.redis.url);
          verdict(`token answer: ${name}`, {
            exchange_failed: final.href === `${EXTENSION_REDIRECT}?error=exchange_failed`,
            'the fault was used': cluster.control.faults().length === 0,
            'nothing stored': added(before, after).length === 0,
            'the attacker saw nothing': cluster.attacker.connections === 0,
          });
        } finally {
          await client.close();
        }
      },
    );
  });
}
