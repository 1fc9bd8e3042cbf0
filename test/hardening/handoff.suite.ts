import { routes } from '@baton/shared';
import { beforeEach, describe, expect, it } from 'vitest';
import { callApi, consent, redeemAt, startAuth, type Client } from '../support/client.ts';
import { added, stored } from '../support/inspect.ts';
import { verdict, suite } from './shared.ts';

/** A fresh handoff from a whole flow across the instances, not yet redeemed. */
async function handoffFor(client: Client) {
  const flow = await startAuth(client, 0);
  const { final } = await client.navigate(await consent(flow), 1);
  const handoff = final.searchParams.get('handoff');
  if (handoff === null) throw new Error(`flow ended with ${final.href}`);
  return { handoff, verifier: flow.verifier, challenge: flow.challenge };
}

const errorOf = async (response: Response) => ((await response.json()) as { error?: string }).error;

export function describeHandoff(): void {
  describe('hostile redemptions of a handoff at POST /session', () => {
    let client: Client;
    beforeEach(async () => {
      suite.cluster.control.reset();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      client = suite.cluster.client();
      return () => client.close();
    });

    it('replayed on the other instances after it was redeemed: invalid_grant, one connection', async () => {
      const { handoff, verifier } = await handoffFor(client);
      const before = await stored(suite.cluster.redis.url);
      expect((await redeemAt(client, 0, handoff, verifier)).status).toBe(201);
      const replays = await Promise.all(
        [1, 2, 0].map((via) => redeemAt(client, via, handoff, verifier)),
      );
      const errors = await Promise.all(replays.map(errorOf));
      const after = await stored(suite.cluster.redis.url);
      verdict('handoff: replayed on every instance', {
        'every replay is invalid_grant': errors.every((error) => error === 'invalid_grant'),
        'one connection stored': added(before, after, ['connections']).length === 1,
      });
    });

    it.each([
      ['a wrong verifier', (_challenge: string) => 'w'.repeat(43)],
      ['the challenge sent as the verifier', (challenge: string) => challenge],
      ['a verifier of another flow', () => 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'],
    ])(
      '%s: invalid_grant, and the handoff is burnt for the right verifier too',
      async (name, wrong) => {
        const { handoff, verifier, challenge } = await handoffFor(client);
        const before = await stored(suite.cluster.redis.url);
        const first = await redeemAt(client, 1, handoff, wrong(challenge));
        const firstError = await errorOf(first);
        const right = await redeemAt(client, 2, handoff, verifier);
        const after = await stored(suite.cluster.redis.url);
        verdict(`handoff: ${name}`, {
          invalid_grant: first.status === 400 && firstError === 'invalid_grant',
          'burnt for the right verifier': right.status === 400,
          'nothing stored': added(before, after).length === 0,
        });
      },
    );

    it('a handoff of one flow with the verifier of another: invalid_grant', async () => {
      const one = await handoffFor(client);
      const two = await handoffFor(client);
      const before = await stored(suite.cluster.redis.url);
      const swapped = await redeemAt(client, 2, one.handoff, two.verifier);
      const after = await stored(suite.cluster.redis.url);
      verdict('handoff: swapped between two flows', {
        invalid_grant: (await errorOf(swapped)) === 'invalid_grant',
        'nothing stored': added(before, after).length === 0,
      });
    });

    it('a made-up handoff: invalid_grant', async () => {
      const response = await redeemAt(client, 0, 'A'.repeat(43), 'v'.repeat(43));
      verdict('handoff: made up', { invalid_grant: (await errorOf(response)) === 'invalid_grant' });
    });

    it('a GET instead of a POST (handoff and verifier in the URL): refused, redeems nothing', async () => {
      const { handoff, verifier } = await handoffFor(client);
      const before = await stored(suite.cluster.redis.url);
      const query = new URLSearchParams({ handoff, code_verifier: verifier }).toString();
      const answers = await Promise.all(
        [0, 1, 2].map((via) => client.fetch(`${routes.session}?${query}`, { via })),
      );
      const after = await stored(suite.cluster.redis.url);
      verdict('handoff: GET instead of POST', {
        'every GET is a 4xx': answers.every(
          (answer) => answer.status >= 400 && answer.status < 500,
        ),
        'no session token in any answer': (
          await Promise.all(answers.map((answer) => answer.text()))
        ).every((text) => !text.includes('session_token')),
        'nothing stored': added(before, after).length === 0,
      });
      // It did nothing at all: the POST still redeems it.
      expect((await redeemAt(client, 2, handoff, verifier)).status).toBe(201);
    });

    it.each([
      [
        'text/plain',
        'text/plain',
        (h: string, v: string) => JSON.stringify({ handoff: h, code_verifier: v }),
      ],
      [
        'a form',
        'application/x-www-form-urlencoded',
        (h: string, v: string) => new URLSearchParams({ handoff: h, code_verifier: v }).toString(),
      ],
      [
        'JSON with the fields under __proto__',
        'application/json',
        (h: string, v: string) => `{"__proto__":{"handoff":"${h}","code_verifier":"${v}"}}`,
      ],
      [
        'JSON with the fields under constructor.prototype',
        'application/json',
        (h: string, v: string) =>
          JSON.stringify({ constructor: { prototype: { handoff: h, code_verifier: v } } }),
      ],
      [
        'JSON with arrays for the fields',
        'application/json',
        (h: string, v: string) => JSON.stringify({ handoff: [h], code_verifier: [v] }),
      ],
    ])('a body as %s: 400, nothing stored', async (name, type, body) => {
      const { handoff, verifier } = await handoffFor(client);
      const before = await stored(suite.cluster.redis.url);
      const response = await client.fetch(routes.session, {
        via: 1,
        method: 'POST',
        headers: { 'content-type': type },
        body: body(handoff, verifier),
      });
      const after = await stored(suite.cluster.redis.url);
      verdict(`handoff: body as ${name}`, {
        '400': response.status === 400,
        'nothing stored': added(before, after).length === 0,
      });
    });

    it('20 parallel redemptions of one handoff across the instances: exactly one wins', async () => {
      const { handoff, verifier } = await handoffFor(client);
      const before = await stored(suite.cluster.redis.url);
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) => redeemAt(client, index % 3, handoff, verifier)),
      );
      const statuses = answers.map((answer) => answer.status);
      const winner = answers.find((answer) => answer.status === 201);
      const after = await stored(suite.cluster.redis.url);
      verdict('handoff: 20 parallel redemptions', {
        'exactly one 201': statuses.filter((status) => status === 201).length === 1,
        'nineteen 400': statuses.filter((status) => status === 400).length === 19,
        'one connection stored': added(before, after, ['connections']).length === 1,
        'one session stored': added(before, after, ['sessions']).length === 1,
      });
      const session = (await winner!.json()) as {
        session_token: string;
        connection: { id: string };
      };
      const works = await callApi(client, 2, {
        token: session.session_token,
        id: session.connection.id,
      });
      expect(works.status).toBe(200);
    });

    it('redeemed 60 s after it was issued, on another instance (injected clock): invalid_grant', async () => {
      const { trio } = suite;
      trio.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      const trioClient = trio.client();
      try {
        const { handoff, verifier } = await handoffFor(trioClient);
        const before = await stored(trio.redis.url);
        trio.clock.advance(60_000);
        const late = await redeemAt(trioClient, 2, handoff, verifier);
        const after = await stored(trio.redis.url);
        verdict('handoff: after 60 s', {
          invalid_grant: (await errorOf(late)) === 'invalid_grant',
          'nothing stored': added(before, after).length === 0,
        });
      } finally {
        await trioClient.close();
      }
    });
  });

  describe('prototype keys and parameter pollution (brokers in this process, so the prototype can be checked)', () => {
    it('__proto__ and constructor keys in queries and bodies change nothing, and pollute nothing', async () => {
      const { trio } = suite;
      trio.control.reset();
      trio.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      const client = trio.client();
      const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();
      try {
        // A whole flow whose every request carries prototype keys.
        const flow = await startAuth(client, 0);
        const callback = await consent(flow);
        for (const [name, value] of [
          ['__proto__[polluted]', 'yes'],
          ['constructor[prototype][polluted]', 'yes'],
          ['__proto__.polluted', 'yes'],
          ['__proto__[api_url]', `${suite.cluster.attacker.origin}/licenses/lic-1001`],
          ['__proto__[state]', 'x'],
        ] as const)
          callback.searchParams.append(name, value);
        const { final } = await client.navigate(callback, 1);
        const handoff = final.searchParams.get('handoff');
        const polluted = await client.fetch(routes.session, {
          via: 2,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: `{"handoff":"${handoff ?? ''}","code_verifier":"${flow.verifier}","__proto__":{"polluted":"yes","isAdmin":true},"constructor":{"prototype":{"polluted":"yes"}}}`,
        });
        const body = (await polluted.json()) as {
          session_token?: string;
          connection?: { id: string };
        };
        const call = await client.fetch(
          `${routes.proxy(body.connection?.id ?? 'x', 'users.me')}?__proto__[polluted]=yes`,
          { via: 0, headers: { authorization: `Bearer ${body.session_token ?? ''}` } },
        );
        verdict('prototype keys through a whole flow', {
          'the flow still ends with a handoff': handoff !== null,
          'the exchange went to the real api_url': trio.control
            .requests()
            .some((request) => request.target === 'token'),
          'the attacker saw nothing': suite.cluster.attacker.connections === 0,
          'the session is created as usual': polluted.status === 201,
          'the call works as usual': call.status === 200,
          'Object.prototype is untouched':
            JSON.stringify(Object.getOwnPropertyNames(Object.prototype).sort()) ===
            JSON.stringify(prototypeBefore),
          'no object inherits a polluted key':
            ({} as Record<string, unknown>).polluted === undefined &&
            ({} as Record<string, unknown>).isAdmin === undefined,
        });
      } finally {
        await client.close();
      }
    });

    it('repeated code parameters at the callback: no exchange', async () => {
      const { cluster } = suite;
      cluster.control.reset();
      cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      const client = cluster.client();
      try {
        const callback = await consent(await startAuth(client, 0));
        callback.searchParams.append('code', 'sbx_code_attacker-chosen');
        const { final } = await client.navigate(callback, 2);
        verdict('callback pollution: two codes', {
          exchange_failed: final.searchParams.get('error') === 'exchange_failed',
          'no token request': cluster.control
            .requests()
            .every((request) => request.target !== 'token'),
        });
      } finally {
        await client.close();
      }
    });
  });
}
