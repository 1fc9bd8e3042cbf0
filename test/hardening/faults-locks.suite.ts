import { beforeEach, describe, expect, it } from 'vitest';
import { callApi, connectVia, type Client, type Connected } from '../support/client.ts';
import { refreshLock, storedConnection } from '../support/inspect.ts';
import { timed, until } from '../support/wait.ts';
import { expectSurvivors } from './survivors.suite.ts';
import { ledger, suite } from './shared.ts';

const LICENSE = 'lic-1002';
/** The cluster's TOKEN_TIMEOUT_MS + REFRESH_LEASE_MS: the longest a caller may wait for a lock. */
const WAIT_BUDGET_MS = 1_500 + 3_000 + 1_000;

const tokenRequests = () =>
  suite.cluster.control.requests().filter((request) => request.target === 'token');

/** The access token the sandbox issued last: the one a correct broker now holds. */
const newestAccessToken = () =>
  suite.cluster.control.secrets().findLast((secret) => secret.startsWith('sbx_at_'));

export function describeLockFaults(): void {
  describe('a refresh holder that dies or stalls (three processes, real leases)', () => {
    let client: Client;
    let session: Connected;
    let versionBefore: number;

    beforeEach(async () => {
      const { cluster } = suite;
      client = cluster.client();
      cluster.control.clearFaults();
      cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
      session = await connectVia(client);
      versionBefore = (await storedConnection(cluster.redis.url, session))!.version;
      cluster.control.reset();
      // The next token request of this license is held at the sandbox until its client goes away.
      cluster.control.addFault({
        kind: 'latency',
        target: 'token',
        ms: 60_000,
        licenseId: LICENSE,
        count: 1,
      });
      cluster.control.expireAccessTokens(LICENSE);
      return async () => {
        cluster.brokers[0]!.signal('SIGCONT');
        await client.close();
      };
    });

    /** Instance 0 takes the lock and sends its refresh, which the sandbox holds. */
    async function holderOnInstanceZero(): Promise<{ held: Promise<number> }> {
      const held = callApi(client, 0, session).then(
        async (response) => {
          await response.text();
          return response.status;
        },
        () => 0,
      );
      await until(() => tokenRequests().length === 1, { what: 'the refresh to reach the sandbox' });
      expect(await refreshLock(suite.cluster.redis.url, session)).not.toBeNull();
      return { held };
    }

    it('SIGKILLed while its refresh is in flight: the others wait out its lease, exactly one refresh follows, every call succeeds', async () => {
      const { cluster } = suite;
      const { held } = await holderOnInstanceZero();
      await cluster.brokers[0]!.stop('SIGKILL');
      ledger.fault('broker SIGKILLed mid-refresh');
      expect(await held).toBe(0);

      const { ms, value } = await timed(() =>
        Promise.all(Array.from({ length: 10 }, (_, i) => callApi(client, 1 + (i % 2), session))),
      );
      expect(value.map((response) => response.status)).toEqual(Array(10).fill(200));
      expect(ms).toBeLessThan(WAIT_BUDGET_MS);
      expect(cluster.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
      expect(tokenRequests()).toHaveLength(2);
      expect((await storedConnection(cluster.redis.url, session))!.version).toBe(versionBefore + 1);

      await cluster.restart(0);
      expect((await callApi(client, 0, session)).status).toBe(200);
      expect(cluster.control.counters().refreshes).toBe(1);
      await expectSurvivors(client, { 'holder killed': session });
    });

    it('SIGSTOPped past its lease and resumed: one refresh by another instance, the stale holder overwrites nothing, and the next rotation is not held back', async () => {
      const { cluster } = suite;
      const { held } = await holderOnInstanceZero();
      cluster.brokers[0]!.signal('SIGSTOP');
      ledger.fault('broker SIGSTOPped past its lease');
      await until(async () => (await refreshLock(cluster.redis.url, session)) === null, {
        what: "the stopped holder's lease to run out",
        deadlineMs: WAIT_BUDGET_MS,
      });

      const others = await Promise.all(
        Array.from({ length: 10 }, (_, i) => callApi(client, 1 + (i % 2), session)),
      );
      expect(others.map((response) => response.status)).toEqual(Array(10).fill(200));
      expect(cluster.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
      const rotated = newestAccessToken();

      cluster.brokers[0]!.signal('SIGCONT');
      const stale = await held;
      // The stale holder answers its caller (with the newer pair, or a 503 to retry), never 401.
      expect([200, 503]).toContain(stale);
      expect((await storedConnection(cluster.redis.url, session))!.version).toBe(versionBefore + 1);
      const echo = await callApi(client, 0, session, 'echo/who');
      expect(echo.status).toBe(200);
      const { headers } = (await echo.json()) as { headers: { authorization: string } };
      expect(headers.authorization).toBe(`Bearer ${rotated}`);
      expect(cluster.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });

      // The next rotation happens on the next call, whichever instance takes it.
      cluster.control.expireAccessTokens(LICENSE);
      const next = await Promise.all([0, 1, 2].map((via) => callApi(client, via, session)));
      expect(next.map((response) => response.status)).toEqual([200, 200, 200]);
      expect(cluster.control.counters()).toMatchObject({ refreshes: 2, reuse_detected: 0 });
      await expectSurvivors(client, { 'holder stopped': session });
    });
  });
}
