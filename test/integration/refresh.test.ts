import { connectionsResponseSchema, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { call, connect, tokenRequests } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

const HOUR = 3_600_000;
const MARGIN = 300_000;

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

const control = () => world.sandbox.sandbox.control;
const tokenCalls = () => tokenRequests(world);
const usersMe = (token: string, id: string) => call(world, routes.proxy(id, 'users.me'), token);
const statusOf = async (token: string, id: string) =>
  connectionsResponseSchema
    .parse(await (await call(world, routes.connections, token)).json())
    .connections.find((connection) => connection.id === id);

/** A fresh connection, with the sandbox's counters starting at zero after its code exchange. */
async function connected() {
  const session = await connect(world);
  control().reset();
  return { token: session.session_token, id: session.connection.id };
}

describe('proactive refresh', () => {
  it('does not refresh while more than the margin is left', async () => {
    const { token, id } = await connected();
    world.clock.advance(HOUR - MARGIN - 1000);
    expect((await usersMe(token, id)).status).toBe(200);
    expect(control().counters().refreshes).toBe(0);
  });

  it('refreshes once when the margin is reached, then uses the new token', async () => {
    const { token, id } = await connected();
    const before = await statusOf(token, id);
    world.clock.advance(HOUR - MARGIN);
    expect((await usersMe(token, id)).status).toBe(200);
    expect((await usersMe(token, id)).status).toBe(200);
    expect(control().counters().refreshes).toBe(1);
    const after = await statusOf(token, id);
    expect(Date.parse(after!.access_expires_at!)).toBeGreaterThan(
      Date.parse(before!.access_expires_at!),
    );
  });

  it('when 50 calls arrive at expiry, exactly one refresh happens and every call succeeds', async () => {
    const { token, id } = await connected();
    world.clock.advance(HOUR);
    const responses = await Promise.all(Array.from({ length: 50 }, () => usersMe(token, id)));
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200));
    expect(control().counters().refreshes).toBe(1);
    expect(control().counters().reuse_detected).toBe(0);
    expect(tokenCalls()).toBe(1);
  });
});

describe('on an upstream 401', () => {
  it('refreshes once and retries once', async () => {
    const { token, id } = await connected();
    control().expireAccessTokens(world.sandbox.sandbox.accounts[0]!.licenses[0]!.id);
    const response = await usersMe(token, id);
    expect(response.status).toBe(200);
    expect(control().counters().refreshes).toBe(1);
    expect(control().counters().api_unauthorized).toBe(1);
    expect(control().counters().api_calls).toBe(2);
  });

  it('never refreshes on a 403', async () => {
    const { token, id } = await connected();
    control().addFault({ target: 'api', kind: 'status', status: 403, count: 1 });
    const response = await usersMe(token, id);
    expect(response.status).toBe(403);
    expect(tokenCalls()).toBe(0);
  });
});

describe('when the provider rejects the refresh', () => {
  it('marks the connection disconnected with a reason, answers 401 reauthorization_required, and calls the provider no more', async () => {
    const { token, id } = await connected();
    control().revokeGrant(world.sandbox.sandbox.accounts[0]!.licenses[0]!.id);
    world.clock.advance(HOUR);
    const first = await usersMe(token, id);
    expect(first.status).toBe(401);
    expect(await first.json()).toMatchObject({ error: 'reauthorization_required' });
    expect(await statusOf(token, id)).toMatchObject({
      status: 'disconnected',
      disconnected_reason: 'refresh_rejected',
      access_expires_at: null,
    });
    const calls = control().requests().length;
    expect((await usersMe(token, id)).status).toBe(401);
    expect(control().requests().length).toBe(calls);
    expect(tokenCalls()).toBe(1);
  });
});

describe('when the provider fails for a while', () => {
  it('keeps the connection, answers 503 with Retry-After, backs off, and recovers', async () => {
    const { token, id } = await connected();
    control().addFault({ target: 'token', kind: 'status', status: 503, count: 100 });
    world.clock.advance(HOUR);
    const failed = await usersMe(token, id);
    expect(failed.status).toBe(503);
    expect(await failed.json()).toMatchObject({ error: 'upstream_unavailable' });
    expect(Number(failed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Within the back-off, no further provider call.
    expect((await usersMe(token, id)).status).toBe(503);
    expect(tokenCalls()).toBe(1);
    expect(await statusOf(token, id)).toMatchObject({ status: 'connected' });

    control().clearFaults();
    world.clock.advance(2000);
    expect((await usersMe(token, id)).status).toBe(200);
    expect(control().counters().refreshes).toBe(1);
  });

  it('keeps using a still-valid token when a proactive refresh fails', async () => {
    const { token, id } = await connected();
    control().addFault({ target: 'token', kind: 'status', status: 500, count: 1 });
    world.clock.advance(HOUR - MARGIN);
    expect((await usersMe(token, id)).status).toBe(200);
    expect(tokenCalls()).toBe(1);
  });

  it('after a lost refresh response, ends disconnected with a reason after at most two provider calls', async () => {
    const { token, id } = await connected();
    control().addFault({ target: 'token', kind: 'drop_after_rotate', count: 1 });
    world.clock.advance(HOUR);
    expect((await usersMe(token, id)).status).toBe(503);
    world.clock.advance(2000);
    const second = await usersMe(token, id);
    expect(second.status).toBe(401);
    expect(await statusOf(token, id)).toMatchObject({
      status: 'disconnected',
      disconnected_reason: 'refresh_response_lost',
    });
    expect(tokenCalls()).toBe(2);
  });
});
