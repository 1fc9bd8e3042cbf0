import { connectionsResponseSchema, routes } from '@baton/shared';
import { expect } from 'vitest';
import type { Client, Connected } from '../support/client.ts';
import { ledger } from './shared.ts';

/**
 * After a fault: every connection that should have survived is still listed as connected and
 * answers a proxied call. Each one that does not is counted as lost before the test fails.
 */
export async function expectSurvivors(
  client: Client,
  survivors: Record<string, Connected>,
  options: { call?: boolean } = {},
): Promise<void> {
  const problems: string[] = [];
  let via = 0;
  for (const [name, session] of Object.entries(survivors)) {
    const listed = await client.fetch(routes.connections, {
      via: via++,
      headers: { authorization: `Bearer ${session.token}` },
    });
    const status =
      listed.status === 200
        ? connectionsResponseSchema
            .parse(await listed.json())
            .connections.find((connection) => connection.id === session.id)?.status
        : `GET /connections answered ${listed.status}`;
    let called = 200;
    if (options.call !== false) {
      const response = await client.fetch(routes.proxy(session.id, 'users.me'), {
        via: via++,
        headers: { authorization: `Bearer ${session.token}` },
      });
      await response.text();
      called = response.status;
    }
    if (status !== 'connected' || called !== 200) {
      ledger.connectionLost(`${name}: ${String(status)}, call ${called}`);
      problems.push(`${name}: ${String(status)}, call answered ${called}`);
    }
  }
  expect(problems, 'connections that did not survive').toEqual([]);
}
