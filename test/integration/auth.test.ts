import { routes } from '@baton/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorize,
  providerCallback,
  startFlow,
  TestBrowser,
  tokenRequests,
} from '../support/flow.ts';
import { AttackerListener } from '../support/listener.ts';
import { EXTENSION_REDIRECT, useWorld } from '../support/world.ts';

const world = useWorld({}, { resetSandbox: true, expectNoLeaks: true });

const exchanges = () => world.sandbox.sandbox.control.counters().code_exchanges;

function startUrl(params: Record<string, string>): string {
  const url = new URL(routes.authStart, world.broker.url);
  url.search = new URLSearchParams(params).toString();
  return url.href;
}
const validStart = {
  locale: 'fr',
  redirect_uri: EXTENSION_REDIRECT,
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
};

describe('GET /auth/start', () => {
  it('redirects to the provider with client_id, response_type, redirect_uri and a fresh state, and nothing else', async () => {
    const browser = new TestBrowser(world);
    const response = await browser.get(startUrl(validStart));
    expect(response.status).toBe(302);
    const location = new URL(response.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(
      `${world.sandbox.url}/fr/api/oauth2/authorize`,
    );
    expect([...location.searchParams.keys()].sort()).toEqual([
      'client_id',
      'redirect_uri',
      'response_type',
      'state',
    ]);
    expect(location.searchParams.get('response_type')).toBe('code');
    expect(location.searchParams.get('redirect_uri')).toBe(`${world.broker.url}/auth/callback`);
    expect(location.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const again = new URL((await browser.get(startUrl(validStart))).headers.get('location')!);
    expect(again.searchParams.get('state')).not.toBe(location.searchParams.get('state'));
  });

  it('sets an HttpOnly, SameSite=Lax session cookie and forbids caching and referrers', async () => {
    const response = await fetch(startUrl(validStart), { redirect: 'manual' });
    const cookie = response.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^baton\.auth=/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it.each([
    ['locale', { locale: 'en' }],
    ['redirect_uri', { redirect_uri: 'https://evil.test/' }],
    ['redirect_uri', { redirect_uri: `${EXTENSION_REDIRECT}x` }],
    ['code_challenge', { code_challenge: 'short' }],
    ['code_challenge_method', { code_challenge_method: 'plain' }],
  ])('answers 400 naming %s when it is wrong', async (parameter, override) => {
    const response = await fetch(startUrl({ ...validStart, ...override }), { redirect: 'manual' });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(await response.text()).toContain(`&quot;${parameter}&quot;`);
  });
});

describe('GET /auth/callback', () => {
  it('exchanges the code once and hands off to the extension', async () => {
    const { result } = await authorize(world);
    expect(result.href.startsWith(EXTENSION_REDIRECT)).toBe(true);
    expect(result.searchParams.get('handoff')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect([...result.searchParams.keys()]).toEqual(['handoff']);
    expect(exchanges()).toBe(1);
  });

  it('when the user denies, answers the latest pending flow with access_denied', async () => {
    world.sandbox.sandbox.control.setConsent({ mode: 'deny' });
    const browser = new TestBrowser(world);
    const flow = await startFlow(world, browser);
    const { final } = await browser.navigate(flow.authorizeUrl.href);
    expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=access_denied`);
    expect(tokenRequests(world)).toBe(0);
  });

  describe('when state is not the one this browser was given, the code is never sent', () => {
    async function callbackWith(
      mutate: (callback: URL, browser: TestBrowser) => URL | Promise<URL>,
      browser = new TestBrowser(world),
    ) {
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const flow = await startFlow(world, browser);
      const callback = await providerCallback(flow);
      return browser.navigate((await mutate(callback, browser)).href);
    }

    it.each([
      ['missing', (url: URL) => (url.searchParams.delete('state'), url)],
      ['empty', (url: URL) => (url.searchParams.set('state', ''), url)],
      ['random', (url: URL) => (url.searchParams.set('state', 'x'.repeat(43)), url)],
      [
        'case-changed',
        (url: URL) => (
          url.searchParams.set('state', url.searchParams.get('state')!.toUpperCase()),
          url
        ),
      ],
      ['repeated', (url: URL) => (url.searchParams.append('state', 'other'), url)],
      [
        'in array form',
        (url: URL) => {
          const state = url.searchParams.get('state')!;
          url.searchParams.delete('state');
          url.searchParams.set('state[]', state);
          return url;
        },
      ],
    ])('%s: redirects with invalid_state', async (_name, mutate) => {
      const { final } = await callbackWith(mutate);
      expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=invalid_state`);
      expect(tokenRequests(world)).toBe(0);
    });

    it('from another browser session: invalid_state, and the other session keeps its flow', async () => {
      const victim = new TestBrowser(world);
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const attackerFlow = await startFlow(world, new TestBrowser(world));
      const attackerCallback = await providerCallback(attackerFlow);
      await startFlow(world, victim);
      const { final } = await victim.navigate(attackerCallback.href);
      expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=invalid_state`);
      expect(tokenRequests(world)).toBe(0);
    });

    it('without the cookie: a 400 page', async () => {
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const flow = await startFlow(world, new TestBrowser(world));
      const callback = await providerCallback(flow);
      const response = await fetch(callback, { redirect: 'manual' });
      expect(response.status).toBe(400);
      expect(tokenRequests(world)).toBe(0);
    });

    it('replayed after success: invalid_state, one exchange in all', async () => {
      const browser = new TestBrowser(world);
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const flow = await startFlow(world, browser);
      await startFlow(world, browser); // a second pending flow, so the replay gets a redirect
      const callback = await providerCallback(flow);
      const first = await browser.navigate(callback.href);
      expect(first.final.searchParams.get('handoff')).toBeTruthy();
      const replay = await browser.navigate(callback.href);
      expect(replay.final.href).toBe(`${EXTENSION_REDIRECT}?error=invalid_state`);
      expect(exchanges()).toBe(1);
      expect(tokenRequests(world)).toBe(1);
    });

    it('after 10 minutes: invalid_state', async () => {
      const browser = new TestBrowser(world);
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const old = await startFlow(world, browser);
      const callback = await providerCallback(old);
      world.clock.advance(9 * 60_000);
      await startFlow(world, browser);
      world.clock.advance(60_000);
      const { final } = await browser.navigate(callback.href);
      expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=invalid_state`);
      expect(tokenRequests(world)).toBe(0);
    });

    it('when two callbacks with the same state race, only one exchanges', async () => {
      const browser = new TestBrowser(world);
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const flow = await startFlow(world, browser);
      const callback = await providerCallback(flow);
      const results = await Promise.all(
        Array.from({ length: 5 }, () => browser.navigate(callback.href)),
      );
      expect(results.filter((result) => result.final.searchParams.has('handoff'))).toHaveLength(1);
      expect(tokenRequests(world)).toBe(1);
    });
  });

  describe('when api_url is not allowed, neither code nor secret goes anywhere', () => {
    let attacker: AttackerListener;
    beforeAll(async () => {
      attacker = await AttackerListener.start();
    });
    afterAll(async () => {
      await attacker[Symbol.asyncDispose]();
    });

    it.each([
      ['a foreign origin', () => `${attacker.origin}/licenses/x`],
      ['userinfo', () => `${world.sandbox.url}@127.0.0.1:${attacker.port}/`],
      ['missing', () => undefined],
    ])('%s: invalid_api_url', async (_name, apiUrl) => {
      const browser = new TestBrowser(world);
      world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
      const flow = await startFlow(world, browser);
      const callback = await providerCallback(flow);
      const value = apiUrl();
      if (value === undefined) callback.searchParams.delete('api_url');
      else callback.searchParams.set('api_url', value);
      const { final } = await browser.navigate(callback.href);
      expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=invalid_api_url`);
      expect(attacker.connections).toBe(0);
      expect(tokenRequests(world)).toBe(0);
    });
  });

  it('answers exchange_failed when the provider refuses the code', async () => {
    const browser = new TestBrowser(world);
    world.sandbox.sandbox.control.setConsent({ mode: 'approve' });
    const flow = await startFlow(world, browser);
    const callback = await providerCallback(flow);
    world.clock.advance(121_000); // codes live 2 minutes
    const { final } = await browser.navigate(callback.href);
    expect(final.href).toBe(`${EXTENSION_REDIRECT}?error=exchange_failed`);
  });

  it('never writes the callback query string to the access log', async () => {
    await authorize(world);
    const callbackLines = world.broker.logs.lines.filter((line) => line.includes('/auth/callback'));
    expect(callbackLines.length).toBeGreaterThan(0);
    for (const line of callbackLines) expect(line).not.toMatch(/code=|state=|api_url=/);
  });
});

describe('behind TLS (PUBLIC_URL https, one trusted proxy)', () => {
  it('uses a __Host- prefixed Secure cookie and sends HSTS', async () => {
    const tls = await world.startBroker({
      PUBLIC_URL: 'https://broker.example.test',
      TRUST_PROXY: '1',
    });
    try {
      const response = await fetch(
        `${tls.url}${routes.authStart}${new URL(startUrl(validStart)).search}`,
        {
          redirect: 'manual',
          headers: { 'x-forwarded-proto': 'https' },
        },
      );
      expect(response.status).toBe(302);
      const cookie = response.headers.get('set-cookie')!;
      expect(cookie).toMatch(/^__Host-baton\.auth=/);
      expect(cookie).toMatch(/; Secure/i);
      expect(cookie).toMatch(/; Path=\//);
      expect(cookie).not.toMatch(/Domain=/i);
      expect(response.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
      expect(new URL(response.headers.get('location')!).searchParams.get('redirect_uri')).toBe(
        'https://broker.example.test/auth/callback',
      );
    } finally {
      await tls.close();
    }
  });

  it('sends no HSTS over plain http', async () => {
    const response = await fetch(startUrl(validStart), { redirect: 'manual' });
    expect(response.headers.get('strict-transport-security')).toBeNull();
  });
});
