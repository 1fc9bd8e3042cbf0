import { connectionsResponseSchema, routes } from '@baton/shared';
import type { Fault } from '@baton/sandbox';
import { beforeEach, describe, expect, it } from 'vitest';
import { callApi, connectVia, type Client, type Connected } from '../support/client.ts';
import { timed } from '../support/wait.ts';
import { expectSurvivors } from './survivors.suite.ts';
import { ledger, suite } from './shared.ts';

const HOUR = 3_600_000;

/** A connection's status as GET /connections lists it. */
async function statusOf(client: Client, session: Connected, via = 0) {
  const response = await client.fetch(routes.connections, {
    via,
    headers: { authorization: `Bearer ${session.token}` },
  });
  return connectionsResponseSchema
    .parse(await response.json())
    .connections.find((connection) => connection.id === session.id);
}

const tokenCalls = (control: { requests(): { target: string }[] }) =>
  control.requests().filter((request) => request.target === 'token').length;

export function describeProviderFaults(): void {
  describe('provider faults on refresh (three instances on an injected clock)', () => {
    let client: Client;
    beforeEach(() => {
      client = suite.trio.client();
      suite.trio.control.clearFaults();
      return () => client.close();
    });

    /** A fresh connection of `licenseId`, with the sandbox's counters at zero after it. */
    async function fresh(licenseId: string): Promise<Connected> {
      suite.trio.control.setConsent({ mode: 'approve', licenseId });
      const session = await connectVia(client);
      suite.trio.control.reset();
      return session;
    }

    it.each<[string, Fault]>([
      ['503', { kind: 'status', target: 'token', status: 503 }],
      ['500', { kind: 'status', target: 'token', status: 500 }],
      [
        '502 with an HTML body',
        { kind: 'status', target: 'token', status: 502, body: '<html>Bad gateway</html>' },
      ],
      [
        '429 with Retry-After: 30',
        { kind: 'status', target: 'token', status: 429, retryAfter: 30 },
      ],
      [
        'a timeout (the token endpoint never answers in time)',
        { kind: 'latency', target: 'token', ms: 3_000 },
      ],
    ])(
      'provider %s for ten minutes: connected throughout, 503 with Retry-After, back-off bounds the calls, all recover',
      async (name, fault) => {
        const { trio } = suite;
        const session = await fresh('lic-1001');
        trio.control.addFault({ ...fault, licenseId: 'lic-1001' });
        ledger.fault(`provider ${name} on refresh`);
        trio.clock.advance(HOUR);
        const answers: { status: number; retryAfter: number; ms: number }[] = [];
        for (let second = 0; second <= 600; second += 10) {
          const { ms, value } = await timed(() => callApi(client, second / 10, session));
          await value.text();
          answers.push({
            status: value.status,
            retryAfter: Number(value.headers.get('retry-after')),
            ms,
          });
          trio.clock.advance(10_000);
        }
        const calls = tokenCalls(trio.control);
        expect(answers.filter((answer) => answer.status !== 503)).toEqual([]);
        expect(answers.filter((answer) => !(answer.retryAfter >= 1))).toEqual([]);
        // Each answer within the budget: one token request at most (400 ms) and Redis round trips.
        expect(answers.filter((answer) => answer.ms > 1_500)).toEqual([]);
        // Exponential back-off from 1 s, capped at 60 s: at most 7 + 600/60 attempts in 10 minutes.
        expect(calls).toBeGreaterThanOrEqual(2);
        expect(calls).toBeLessThanOrEqual(17);
        expect(await statusOf(client, session)).toMatchObject({ status: 'connected' });

        trio.control.clearFaults();
        trio.clock.advance(61_000);
        expect((await callApi(client, 1, session)).status).toBe(200);
        expect(trio.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
        await expectSurvivors(client, { [name]: session });
      },
    );

    it('a lost refresh response (rotated, then the connection dropped): at most two provider calls across the instances, then disconnected with a reason, and never a loop', async () => {
      const { trio } = suite;
      const session = await fresh('lic-2001');
      trio.control.addFault({ kind: 'drop_after_rotate', licenseId: 'lic-2001', count: 1 });
      ledger.fault('lost refresh response');
      trio.clock.advance(HOUR);
      const first = await Promise.all(
        Array.from({ length: 12 }, (_, i) => callApi(client, i, session)),
      );
      expect(first.map((response) => response.status)).toEqual(Array(12).fill(503));
      trio.clock.advance(2_000);
      const second = await Promise.all(
        Array.from({ length: 12 }, (_, i) => callApi(client, i, session)),
      );
      expect(second.map((response) => response.status)).toEqual(Array(12).fill(401));
      expect(await statusOf(client, session, 2)).toMatchObject({
        status: 'disconnected',
        disconnected_reason: 'refresh_response_lost',
      });
      for (let minute = 0; minute < 10; minute++) {
        trio.clock.advance(HOUR);
        expect((await callApi(client, minute, session)).status).toBe(401);
      }
      expect(tokenCalls(trio.control)).toBe(2);
    });

    it('a token endpoint slower than the lock lease: the holder gives up within its timeout, no second refresh runs meanwhile, and the next rotation is exactly one refresh', async () => {
      const { trio } = suite;
      const session = await fresh('lic-1002');
      trio.control.addFault({
        kind: 'latency',
        target: 'token',
        ms: 5_000,
        licenseId: 'lic-1002',
        count: 1,
      });
      ledger.fault('token endpoint slower than the lease');
      trio.clock.advance(HOUR);
      const slow = await timed(() =>
        Promise.all(Array.from({ length: 9 }, (_, i) => callApi(client, i, session))),
      );
      expect(slow.value.map((response) => response.status)).toEqual(Array(9).fill(503));
      // Token timeout 400 ms, lease 1200 ms: everyone has an answer well before the endpoint would.
      expect(slow.ms).toBeLessThan(2_500);
      expect(tokenCalls(trio.control)).toBe(1);
      expect(trio.control.counters().refreshes).toBe(0);

      trio.clock.advance(2_000);
      const after = await Promise.all(
        Array.from({ length: 9 }, (_, i) => callApi(client, i, session)),
      );
      expect(after.map((response) => response.status)).toEqual(Array(9).fill(200));
      expect(trio.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
      await expectSurvivors(client, { slow: session });
    });
  });

  describe('provider faults on refresh (three processes)', () => {
    let client: Client;
    beforeEach(() => {
      client = suite.cluster.client();
      suite.cluster.control.clearFaults();
      return () => client.close();
    });

    it('the provider rejects the refresh: disconnected after exactly one attempt, with 30 calls on three instances, and no call to the provider after', async () => {
      const { cluster } = suite;
      cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
      const session = await connectVia(client);
      cluster.control.reset();
      cluster.control.addFault({
        kind: 'status',
        target: 'token',
        status: 400,
        body: '{"error":"invalid_grant","error_description":"The grant was revoked."}',
        licenseId: 'lic-1001',
        count: 1,
      });
      cluster.control.expireAccessTokens('lic-1001');
      ledger.fault('provider rejects the refresh');
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => callApi(client, i, session)),
      );
      const bodies = await Promise.all(
        answers.map((answer) => answer.json() as Promise<{ error: string }>),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(30).fill(401));
      expect(new Set(bodies.map((body) => body.error))).toEqual(
        new Set(['reauthorization_required']),
      );
      expect(await statusOf(client, session, 1)).toMatchObject({
        status: 'disconnected',
        disconnected_reason: 'refresh_rejected',
      });
      expect(tokenCalls(cluster.control)).toBe(1);
      const seen = cluster.control.requests().length;
      for (let i = 0; i < 9; i++) expect((await callApi(client, i, session)).status).toBe(401);
      expect(cluster.control.requests().length).toBe(seen);
    });

    it('the upstream API answers 401 forever: per request at most one refresh and two upstream calls, and the connection stays', async () => {
      const { cluster } = suite;
      cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-2001' });
      const session = await connectVia(client);
      cluster.control.reset();
      cluster.control.addFault({
        kind: 'status',
        target: 'api',
        status: 401,
        licenseId: 'lic-2001',
      });
      ledger.fault('upstream 401 forever');
      const together = await Promise.all(
        Array.from({ length: 21 }, (_, i) => callApi(client, i, session)),
      );
      expect(together.map((response) => response.status)).toEqual(Array(21).fill(401));
      expect(cluster.control.counters().api_calls).toBeLessThanOrEqual(42);
      expect(cluster.control.counters().refreshes).toBeLessThanOrEqual(21);
      for (let i = 0; i < 9; i++) {
        const before = cluster.control.counters();
        expect((await callApi(client, i, session)).status).toBe(401);
        const after = cluster.control.counters();
        expect(after.api_calls - before.api_calls).toBeLessThanOrEqual(2);
        expect(after.refreshes - before.refreshes).toBeLessThanOrEqual(1);
      }
      expect(cluster.control.counters().reuse_detected).toBe(0);
      cluster.control.clearFaults();
      await expectSurvivors(client, { 'upstream 401 forever': session });
    });
  });
}
