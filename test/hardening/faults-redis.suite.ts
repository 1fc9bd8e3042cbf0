import { routes } from '@baton/shared';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  connectVia,
  consent,
  redeemAt,
  startAuth,
  type Client,
  type Connected,
} from '../support/client.ts';
import { stored, storedConnection } from '../support/inspect.ts';
import { EXTENSION_REDIRECT } from '../support/world.ts';
import { timed } from '../support/wait.ts';
import { expectSurvivors } from './survivors.suite.ts';
import { ledger, suite } from './shared.ts';

/** What a client of a broker without its store may get: a fast 503, Retry-After, no secrets. */
const FAST_MS = 1_000;

const startPath = () =>
  `${routes.authStart}?${new URLSearchParams({
    locale: 'nl',
    redirect_uri: EXTENSION_REDIRECT,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString()}`;

const tokenRequests = () =>
  suite.cluster.control.requests().filter((request) => request.target === 'token').length;

export function describeRedisFaults(): void {
  describe('Redis faults (three processes, one Redis with appendonly)', () => {
    let client: Client;
    const survivors: Record<string, Connected> = {};

    beforeAll(async () => {
      client = suite.cluster.client();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      survivors['lic-1001'] = await connectVia(client, { start: 0, callback: 1, redeem: 2 });
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-2001' });
      survivors['lic-2001'] = await connectVia(client, { start: 2, callback: 0, redeem: 1 });
      return () => client.close();
    });
    beforeEach(() => {
      suite.cluster.control.reset();
      suite.cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1002' });
    });
    afterEach(async () => {
      // Whatever a test did, Redis runs again before the next one.
      suite.cluster.redis.resume();
      await suite.cluster.redis.start();
      await suite.cluster.ready();
    });

    it('stopped: /auth/start, /auth/callback (with and without state) and the API answer fast 503s, never exchange, and all works again once Redis is back', async () => {
      const { cluster } = suite;
      // A browser in the middle of an authorization when Redis goes away.
      const pending = await startAuth(client, 0);
      const pendingCallback = await consent(pending);
      const withoutState = new URL(pendingCallback);
      withoutState.searchParams.delete('state');

      await cluster.redis.stop();
      ledger.fault('Redis stopped');
      const answers: Record<string, { status: number; ms: number; retryAfter: string | null }> = {};
      const probe = async (name: string, work: () => Promise<Response>) => {
        const { ms, value } = await timed(work);
        await value.text();
        answers[name] = { status: value.status, ms, retryAfter: value.headers.get('retry-after') };
      };
      for (const via of [0, 1, 2]) {
        await probe(`start@${via}`, () => client.fetch(startPath(), { via }));
        await probe(`callback with state@${via}`, () => client.fetch(pendingCallback, { via }));
        await probe(`callback without state@${via}`, () => client.fetch(withoutState, { via }));
        await probe(`api@${via}`, () => callApi(client, via, survivors['lic-1001']!));
        await probe(`connections@${via}`, () =>
          client.fetch(routes.connections, {
            via,
            headers: { authorization: `Bearer ${survivors['lic-2001']!.token}` },
          }),
        );
        await probe(`session@${via}`, () => redeemAt(client, via, 'A'.repeat(43), 'v'.repeat(43)));
        await probe(`readyz@${via}`, () => client.fetch(routes.readyz, { via }));
      }
      expect(Object.entries(answers).filter(([, answer]) => answer.status !== 503)).toEqual([]);
      expect(Object.entries(answers).filter(([, answer]) => answer.ms > FAST_MS)).toEqual([]);
      expect(
        Object.entries(answers).filter(
          ([name, answer]) => !name.startsWith('readyz') && answer.retryAfter === null,
        ),
      ).toEqual([]);
      expect(tokenRequests()).toBe(0);

      await cluster.redis.start();
      await cluster.ready();
      // Nothing was consumed while Redis was away: the pending authorization finishes now.
      const { final } = await client.navigate(pendingCallback, 2);
      const handoff = final.searchParams.get('handoff');
      expect(final.href.startsWith(EXTENSION_REDIRECT) && handoff !== null).toBe(true);
      const redeemed = await redeemAt(client, 1, handoff!, pending.verifier);
      expect(redeemed.status).toBe(201);
      await expectSurvivors(client, survivors);
    });

    it('killed (SIGKILL) and restarted from its append-only file: no session, connection or pending authorization lost', async () => {
      const { cluster } = suite;
      const pending = await startAuth(client, 1);
      const pendingCallback = await consent(pending);
      const before = await stored(cluster.redis.url);
      const versions = await Promise.all(
        Object.values(survivors).map((session) => storedConnection(cluster.redis.url, session)),
      );

      await cluster.redis.kill();
      ledger.fault('Redis killed');
      await cluster.redis.start();
      await cluster.ready();

      const after = await stored(cluster.redis.url);
      for (const kind of ['connections', 'sessions', 'authSessions'] as const)
        expect(
          [...before[kind]].filter((key) => !after[kind].has(key)),
          kind,
        ).toEqual([]);
      expect(
        await Promise.all(
          Object.values(survivors).map((session) => storedConnection(cluster.redis.url, session)),
        ),
      ).toEqual(versions);
      const { final } = await client.navigate(pendingCallback, 0);
      expect(final.searchParams.get('handoff')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      await expectSurvivors(client, survivors);
    });

    it('frozen (SIGSTOP): every instance still answers within its budget, API calls from its cache only while the heartbeat vouched for it, and all works after SIGCONT', async () => {
      const { cluster } = suite;
      cluster.redis.pause();
      ledger.fault('Redis frozen');
      try {
        // A broker that hangs is given 10 s, then counted as no answer (status 0).
        const status = (request: Promise<Response>) =>
          request.then(
            (response) => response.status,
            () => 0,
          );
        const headers = { authorization: `Bearer ${survivors['lic-1001']!.token}` };
        const api = routes.proxy(survivors['lic-1001']!.id, 'users.me');
        const results = await Promise.all(
          [0, 1, 2].flatMap((via) =>
            [api, startPath(), routes.readyz].map((path) =>
              timed(() => status(client.fetch(path, { via, headers, timeoutMs: 10_000 }))),
            ),
          ),
        );
        const summary = results.map(({ ms, value }, index) => ({
          api: index % 3 === 0,
          status: value,
          ms: Math.round(ms),
        }));
        // An API call may still be answered from the cached session and record for up to a second
        // (no sign-out can happen meanwhile: Redis takes no write); everything else is 503.
        expect(
          summary.filter(({ api, status }) => status !== 503 && !(api && status === 200)),
          JSON.stringify(summary),
        ).toEqual([]);
        // Two bounded Redis commands at most (1 s each) stand between a request and its answer.
        expect(
          summary.filter(({ ms }) => ms > 3_500),
          JSON.stringify(summary),
        ).toEqual([]);
        // Once the heartbeat has gone unanswered, no instance answers from its cache any more.
        for (const via of [0, 1, 2]) {
          await vi.waitFor(
            async () => {
              const { ms, value } = await timed(() =>
                status(client.fetch(api, { via, headers, timeoutMs: 10_000 })),
              );
              expect({ status: value, fast: ms <= 3_500 }).toEqual({ status: 503, fast: true });
            },
            { timeout: 10_000, interval: 100 },
          );
        }
      } finally {
        cluster.redis.resume();
      }
      await cluster.ready();
      await expectSurvivors(client, survivors);
    });

    it('stopped just as the provider rotated the refresh token: the new pair is stored once Redis is back, and the connection lives on', async () => {
      const { cluster } = suite;
      // A license whose api_url goes through the gate, so its token answer can be held.
      const gated = await connectVia(client, {
        apiUrl: `${cluster.gate.origin}/licenses/lic-1002`,
      });
      cluster.control.reset();
      cluster.control.expireAccessTokens('lic-1002');
      const held = cluster.gate.holdAnswer(
        (req) => req.url?.endsWith('/oauth2/access_token') ?? false,
      );
      const call = callApi(client, 0, gated);
      await held.arrived; // the sandbox rotated; the broker has not heard yet
      await cluster.redis.stop();
      ledger.fault('Redis stopped mid-refresh');
      held.release();
      const during = await timed(() => call);
      expect(during.value.status).toBe(503);
      expect(during.ms).toBeLessThan(FAST_MS + 3_000);

      await cluster.redis.start();
      await cluster.ready();
      const after = await callApi(client, 1, gated);
      expect(after.status).toBe(200);
      expect(cluster.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
      await expectSurvivors(client, { ...survivors, gated });
    });
  });
}
