import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { call, connect } from '../support/flow.ts';
import { Gate } from '../support/gate.ts';
import { until } from '../support/wait.ts';
import { useWorld } from '../support/world.ts';

/**
 * TOKEN_WAIT_MS: a call that waits too long for its access token (here, the provider's token
 * endpoint holding its answer) answers 503 with Retry-After instead of leaving its caller to time
 * out, and the refresh it waited for still stores its pair. The provider sits behind a gate that
 * holds the token endpoint's answer until the test lets it go: nothing here waits on a timer.
 */
const HOUR = 3_600_000;
let gate: Gate | undefined;
const world = useWorld(
  {
    env: { TOKEN_WAIT_MS: '300' },
    front: async (sandboxUrl) => {
      const started = await Gate.start(sandboxUrl);
      gate = started;
      return { url: started.origin, close: () => started[Symbol.asyncDispose]() };
    },
  },
  { resetSandbox: true, expectNoLeaks: true },
);

const control = () => world.sandbox.sandbox.control;
const usersMe = (token: string, id: string) => call(world, routes.proxy(id, 'users.me'), token);
const holdRefresh = () =>
  gate!.holdAnswer((req) => req.url?.endsWith('/oauth2/access_token') ?? false);
const logged = (text: string) => world.broker.logs.lines.filter((line) => line.includes(text));

async function connected() {
  const session = await connect(world);
  control().reset();
  return { token: session.session_token, id: session.connection.id };
}

/** The call's answer while its refresh is held, then the pair it waited for, stored. */
async function heldPastTheWait(token: string, id: string) {
  const held = holdRefresh();
  const answer = await usersMe(token, id);
  await held.arrived;
  const stored = logged('refreshed access token').length;
  held.release();
  await until(() => logged('refreshed access token').length > stored, {
    what: 'the refresh to store its pair',
  });
  return answer;
}

async function expectTransient(answer: Response) {
  expect(answer.status).toBe(503);
  expect(answer.headers.get(BROKER_ERROR_HEADER)).toBe('upstream_unavailable');
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await answer.json()).toMatchObject({ error: 'upstream_unavailable' });
}

describe('a call waiting for its access token past TOKEN_WAIT_MS', () => {
  it('answers 503 with Retry-After; the refresh goes on, and the next call uses its pair', async () => {
    const { token, id } = await connected();
    world.clock!.advance(HOUR);
    await expectTransient(await heldPastTheWait(token, id));
    expect(logged('a call stopped waiting for its access token')).toHaveLength(1);
    expect(control().counters().api_calls).toBe(0);

    expect((await usersMe(token, id)).status).toBe(200);
    expect(control().counters()).toMatchObject({ refreshes: 1, api_calls: 1 });
  });

  it('after an upstream 401, sends no retry once it has answered, and lets the refresh lock go', async () => {
    const { token, id } = await connected();
    control().expireAccessTokens(world.sandbox.sandbox.accounts[0]!.licenses[0]!.id);
    await expectTransient(await heldPastTheWait(token, id));
    expect(control().counters()).toMatchObject({ api_calls: 1, api_unauthorized: 1 });

    // The lock kept for the retry that never came went when the pair was stored: a call that
    // meets another 401 refreshes at once rather than waiting out the lease.
    expect((await usersMe(token, id)).status).toBe(200);
    control().expireAccessTokens(world.sandbox.sandbox.accounts[0]!.licenses[0]!.id);
    world.clock!.advance(2 * 60_000);
    expect((await usersMe(token, id)).status).toBe(200);
    expect(control().counters()).toMatchObject({ refreshes: 2, api_unauthorized: 2 });
  });
});
