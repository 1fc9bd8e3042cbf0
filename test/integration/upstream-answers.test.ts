import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { call, connect } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

const world = useWorld(
  { env: { REFRESH_MIN_INTERVAL_SECONDS: '60' } },
  { resetSandbox: true, expectNoLeaks: true },
);

const control = () => world.sandbox.sandbox.control;
const license = () => world.sandbox.sandbox.accounts[0]!.licenses[0]!.id;
const usersMe = (token: string, id: string) => call(world, routes.proxy(id, 'users.me'), token);

/** A license API that answers 401 to everything, dressed as the broker's own invalid_session. */
const forgedInvalidSession = {
  target: 'api',
  kind: 'status',
  status: 401,
  headers: { [BROKER_ERROR_HEADER]: 'invalid_session' },
  body: JSON.stringify({ error: 'invalid_session', message: 'forged by the upstream' }),
} as const;

describe("the broker's own errors and upstream answers are told apart", () => {
  it('marks every error of its own with its code in Baton-Error', async () => {
    const unknown = await usersMe('x'.repeat(43), 'c1');
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get(BROKER_ERROR_HEADER)).toBe('invalid_session');
    const { session_token: token } = await connect(world);
    const missing = await usersMe(token, 'no-such-connection');
    expect(missing.headers.get(BROKER_ERROR_HEADER)).toBe('not_found');
  });

  it('passes an upstream 401 on without the mark, even one that copies it', async () => {
    const { session_token: token, connection } = await connect(world);
    control().addFault(forgedInvalidSession);
    const response = await usersMe(token, connection.id);
    expect(response.status).toBe(401);
    expect(response.headers.get(BROKER_ERROR_HEADER)).toBeNull();
    // The session is untouched: the next call, upstream well again, succeeds.
    control().clearFaults();
    expect((await usersMe(token, connection.id)).status).toBe(200);
  });
});

describe('a 401 to the current token refreshes once and retries, whenever it comes', () => {
  it('refreshes again for a token the provider expires seconds after the last refresh', async () => {
    const { session_token: token, connection } = await connect(world);
    control().reset();
    for (let rotation = 1; rotation <= 5; rotation++) {
      control().expireAccessTokens(license());
      expect((await usersMe(token, connection.id)).status).toBe(200);
      expect(control().counters().refreshes).toBe(rotation);
      world.clock.advance(10_000);
    }
    expect(control().counters().reuse_detected).toBe(0);
  });

  it('a grant revoked right after a refresh answers reauthorization_required at once', async () => {
    const { session_token: token, connection } = await connect(world);
    control().expireAccessTokens(license());
    expect((await usersMe(token, connection.id)).status).toBe(200);
    control().revokeGrant({ licenseId: license() });
    const response = await usersMe(token, connection.id);
    expect(response.status).toBe(401);
    expect(response.headers.get(BROKER_ERROR_HEADER)).toBe('reauthorization_required');
    const listed = (await (await call(world, routes.connections, token)).json()) as {
      connections: { id: string; status: string; disconnected_reason?: string }[];
    };
    expect(listed.connections).toEqual([
      expect.objectContaining({
        id: connection.id,
        status: 'disconnected',
        disconnected_reason: 'refresh_rejected',
      }),
    ]);
  });
});

describe('a path that always answers 401 cannot pump refreshes', () => {
  it('refreshes once for 20 calls, and passes the other 401s on', async () => {
    const { session_token: token, connection } = await connect(world);
    control().addFault({ target: 'api', kind: 'status', status: 401 });
    for (let call = 0; call < 20; call++) {
      const response = await usersMe(token, connection.id);
      expect(response.status).toBe(401);
      expect(response.headers.get(BROKER_ERROR_HEADER)).toBeNull();
    }
    expect(control().counters().refreshes).toBe(1);
    expect(control().counters().api_calls).toBe(21);
  });

  it('allows a 401-triggered refresh again once the interval has passed', async () => {
    const { session_token: token, connection } = await connect(world);
    control().addFault({ target: 'api', kind: 'status', status: 401 });
    await usersMe(token, connection.id);
    world.clock.advance(59_000);
    await usersMe(token, connection.id);
    expect(control().counters().refreshes).toBe(1);
    world.clock.advance(1000);
    await usersMe(token, connection.id);
    expect(control().counters().refreshes).toBe(2);
  });

  it('still refreshes ahead of expiry right after a 401-triggered refresh', async () => {
    const { session_token: token, connection } = await connect(world);
    control().expireAccessTokens(license());
    expect((await usersMe(token, connection.id)).status).toBe(200);
    expect(control().counters().refreshes).toBe(1);
    world.clock.advance(3600_000 - 60_000);
    expect((await usersMe(token, connection.id)).status).toBe(200);
    expect(control().counters().refreshes).toBe(2);
  });
});
