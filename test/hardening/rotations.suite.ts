import { BROKER_ERROR_HEADER } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { callApi, connectVia } from '../support/client.ts';
import { storedConnection } from '../support/inspect.ts';
import { timed } from '../support/wait.ts';
import { expectSurvivors } from './survivors.suite.ts';
import { suite } from './shared.ts';

const ROTATIONS = 200;
const CALLS = 50;
const LICENSE = 'lic-2001';

export function describeRotations(): void {
  describe('many instances: three brokers, one connection, 200 rotations', () => {
    it(`${CALLS} concurrent calls through all three at each of ${ROTATIONS} expiries: exactly ${ROTATIONS} refreshes, no reuse, every call succeeds`, async () => {
      const { cluster } = suite;
      const client = cluster.client({ connections: 24 });
      try {
        cluster.control.clearFaults();
        cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
        const session = await connectVia(client);
        const versionBefore = (await storedConnection(cluster.redis.url, session))!.version;
        cluster.control.reset();
        const failures: string[] = [];
        const { ms } = await timed(async () => {
          for (let rotation = 0; rotation < ROTATIONS; rotation++) {
            // Every access token of the license stops working now: the next calls meet a 401.
            cluster.control.expireAccessTokens(LICENSE);
            const statuses = await Promise.all(
              Array.from({ length: CALLS }, async (_, index) => {
                const response = await callApi(client, index, session);
                await response.arrayBuffer();
                return response.status;
              }),
            );
            statuses.forEach((status, index) => {
              if (status !== 200) failures.push(`rotation ${rotation}, call ${index}: ${status}`);
            });
          }
        });
        console.log(`${ROTATIONS} rotations x ${CALLS} calls in ${Math.round(ms)} ms`);
        expect(failures).toEqual([]);
        expect(cluster.control.counters()).toMatchObject({
          refreshes: ROTATIONS,
          reuse_detected: 0,
          token_errors: 0,
        });
        // One versioned write per rotation, and nothing else.
        expect((await storedConnection(cluster.redis.url, session))!.version).toBe(
          versionBefore + ROTATIONS,
        );
        await expectSurvivors(client, { rotated: session });
      } finally {
        await client.close();
      }
    });

    it("a path that always answers 401, called 90 times through all three: one refresh in the budget window, every 401 passed on as the API's", async () => {
      const { cluster } = suite;
      const client = cluster.client({ connections: 24 });
      try {
        cluster.control.clearFaults();
        cluster.control.setConsent({ mode: 'approve', licenseId: LICENSE });
        const session = await connectVia(client);
        cluster.control.reset();
        cluster.control.addFault({ target: 'api', kind: 'status', status: 401 });
        for (let round = 0; round < 3; round++) {
          const answers = await Promise.all(
            Array.from({ length: 30 }, async (_, index) => {
              const response = await callApi(client, index, session);
              await response.arrayBuffer();
              return `${response.status} ${response.headers.get(BROKER_ERROR_HEADER)}`;
            }),
          );
          expect(new Set(answers)).toEqual(new Set(['401 null']));
        }
        expect(cluster.control.counters()).toMatchObject({ refreshes: 1, reuse_detected: 0 });
        cluster.control.clearFaults();
        expect((await callApi(client, 0, session)).status).toBe(200);
      } finally {
        // Failed or not, the suites after this one get a license API that answers.
        cluster.control.clearFaults();
        await client.close();
      }
    });
  });
}
