import { routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { callApi, connectVia, type Client, type Connected } from '../support/client.ts';
import { storedConnection } from '../support/inspect.ts';
import { expectSurvivors } from './survivors.suite.ts';
import { ledger, suite } from './shared.ts';

const readiness = (client: Client) =>
  Promise.all(
    [0, 1, 2].map(async (via) => {
      const response = await client.fetch(routes.readyz, { via });
      return { status: response.status, body: (await response.json()) as { status: string } };
    }),
  );

export function describeKeyRotation(): void {
  describe('encryption key rotation (rolling restarts of the three processes)', () => {
    it('records sealed under key A keep working once B is active with A kept, are rewritten under B; without A the brokers refuse to be ready and disconnect no one', async () => {
      const { cluster } = suite;
      const client = cluster.client();
      const A = `a:${cluster.keyA}`;
      const B = `b:${cluster.keyB}`;
      try {
        expect(cluster.env.TOKEN_ENCRYPTION_KEYS).toBe(A);
        cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
        const touched: Connected = await connectVia(client);
        cluster.control.setConsent({ mode: 'approve', licenseId: 'lic-2001' });
        const untouched: Connected = await connectVia(client);
        const kid = async (session: Connected) =>
          (await storedConnection(cluster.redis.url, session))?.kid;
        expect([await kid(touched), await kid(untouched)]).toEqual(['a', 'a']);

        // B becomes active, A is kept for decryption.
        await cluster.reconfigure({ TOKEN_ENCRYPTION_KEYS: `${B},${A}` });
        ledger.fault('encryption key rotated');
        expect((await callApi(client, 0, touched)).status).toBe(200);
        expect(await kid(touched)).toBe('b');
        expect(await kid(untouched)).toBe('a');
        expect((await readiness(client)).map(({ status }) => status)).toEqual([200, 200, 200]);

        // A is dropped while a record still needs it.
        await cluster.reconfigure({ TOKEN_ENCRYPTION_KEYS: B });
        ledger.fault('encryption key missing');
        const versionBefore = (await storedConnection(cluster.redis.url, untouched))!.version;
        expect((await callApi(client, 1, touched)).status).toBe(200);
        const refused = await Promise.all([0, 1, 2].map((via) => callApi(client, via, untouched)));
        expect(refused.map((response) => response.status)).toEqual([500, 500, 500]);
        const bodies = await Promise.all(refused.map((response) => response.json()));
        expect(new Set(bodies.map((body) => (body as { error: string }).error))).toEqual(
          new Set(['server_error']),
        );
        const listed = await client.fetch(routes.connections, {
          via: 2,
          headers: { authorization: `Bearer ${untouched.token}` },
        });
        expect(listed.status).toBe(500);
        expect((await readiness(client)).map(({ status }) => status)).toEqual([503, 503, 503]);
        // Nothing was written: the record is as it was, sealed under A, connected.
        expect(await storedConnection(cluster.redis.url, untouched)).toEqual({
          version: versionBefore,
          kid: 'a',
        });

        // The key is back: everyone is ready again and the record moves to B on first use.
        await cluster.reconfigure({ TOKEN_ENCRYPTION_KEYS: `${B},${A}` });
        expect((await readiness(client)).map(({ status }) => status)).toEqual([200, 200, 200]);
        await expectSurvivors(client, { touched, untouched });
        expect(await kid(untouched)).toBe('b');
      } finally {
        await client.close();
      }
    });
  });
}
