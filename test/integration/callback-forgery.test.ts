import { describe, expect, it } from 'vitest';
import { providerCallback, startFlow, TestBrowser, tokenRequests } from '../support/flow.ts';
import { EXTENSION_REDIRECT, useWorld } from '../support/world.ts';

// Its own file (and broker): the auth routes' rate limit would otherwise count auth.test.ts too.
const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

const exchanges = () => world.sandbox.sandbox.control.counters().code_exchanges;

/**
 * A page the user visits can navigate the top-level browser to the broker's callback, and the
 * SameSite=Lax auth cookie goes along: only a callback whose state matches may end a flow.
 */
describe('when another page forges a callback in the same browser, the real sign-in goes on', () => {
  it.each([
    ['a denial', '?error=access_denied'],
    ['another error', '?error=x'],
    ['a random state', `?state=${'r'.repeat(43)}&code=x`],
    ['no state', '?code=x'],
  ])('after %s, the genuine callback still exchanges exactly once', async (_name, forged) => {
    const browser = new TestBrowser(world);
    world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
    const flow = await startFlow(world, browser);
    const callback = await providerCallback(flow);
    await browser.navigate(`${world.broker.url}/auth/callback${forged}`);
    const { final } = await browser.navigate(callback.href);
    expect(final.searchParams.get('handoff')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(exchanges()).toBe(1);
  });

  it('answers a stateless denial with access_denied, and leaves the flow pending', async () => {
    const browser = new TestBrowser(world);
    world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
    const flow = await startFlow(world, browser);
    const denial = await browser.navigate(`${world.broker.url}/auth/callback?error=access_denied`);
    expect(denial.final.href).toBe(`${EXTENSION_REDIRECT}?error=access_denied`);
    const { final } = await browser.navigate((await providerCallback(flow)).href);
    expect(final.searchParams.has('handoff')).toBe(true);
  });

  it("answers an error that carries a flow's state by ending that flow", async () => {
    const browser = new TestBrowser(world);
    world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
    const flow = await startFlow(world, browser);
    const callback = await providerCallback(flow);
    const state = callback.searchParams.get('state')!;
    const failed = await browser.navigate(
      `${world.broker.url}/auth/callback?error=server_error&state=${state}`,
    );
    expect(failed.final.href).toBe(`${EXTENSION_REDIRECT}?error=server_error`);
    const late = await browser.navigate(callback.href);
    expect(late.response?.status).toBe(400);
    expect(tokenRequests(world)).toBe(0);
  });
});
