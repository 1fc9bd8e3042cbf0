import { AUTH_REDIRECT_ERRORS, codeChallengeS256, createCodeVerifier, routes } from '@baton/shared';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { hostPermissionFor } from '../broker-url.ts';
import { STATE_KEY, STATE_VERSION } from '../state/persisted.ts';
import { errorResponse, jsonResponse } from '../testing/fake-broker.ts';
import {
  allStoredText,
  BROKER,
  createHarness,
  LICENCE_A,
  LICENCE_B,
  REDIRECT_URL,
  T0,
} from '../testing/harness.ts';

/** Runs the flow to its end, as the popup's Connect button would. */
async function connect(
  h: Awaited<ReturnType<typeof createHarness>>,
  reconnectId: string | null = null,
) {
  const started = await h.send['flow.start']({ locale: 'nl', reconnectId });
  await h.background.idle();
  return started;
}

describe('flow.start', () => {
  describe('when the user signs in and picks a licence', () => {
    it('answers at once with the running flow, then ends connected with the licence shown', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);

      const started = await connect(h);

      expect(started).toEqual({
        status: 'running',
        locale: 'nl',
        reconnectId: null,
        startedAt: T0,
      });
      const view = await h.view();
      expect(view.signedIn).toBe(true);
      expect(view.flow).toEqual({
        status: 'succeeded',
        connectionId: 'conn-a',
        reconnected: false,
        at: T0,
      });
      expect(view.connections).toHaveLength(1);
      expect(view.connections[0]).toMatchObject({
        id: 'conn-a',
        status: 'connected',
        user: { status: 'loaded', record: LICENCE_A.user },
      });
      expect(view.sync).toEqual({ status: 'ok', problem: null, at: T0 });
    });

    it('opens /auth/start with the locale, the redirect URL and an S256 challenge of the verifier it redeems', async () => {
      const verifier = createCodeVerifier();
      const h = await createHarness({ verifier: () => verifier });
      h.identity.grant(h.broker, LICENCE_A);

      await h.send['flow.start']({ locale: 'fr', reconnectId: null });
      await h.background.idle();

      const [authUrl] = h.identity.launched;
      expect(authUrl?.origin + (authUrl?.pathname ?? '')).toBe(`${BROKER}${routes.authStart}`);
      expect(Object.fromEntries(authUrl?.searchParams ?? [])).toEqual({
        locale: 'fr',
        redirect_uri: REDIRECT_URL,
        code_challenge: await codeChallengeS256(verifier),
        code_challenge_method: 'S256',
      });
      const [redeem] = h.broker.requestsTo('POST', routes.session);
      expect(redeem?.body).toEqual({ handoff: 'handoff-1-conn-a', code_verifier: verifier });
      expect(redeem?.authorization).toBeNull();
      expect(redeem?.credentials).toBe('omit');
    });

    it('keeps the session token in storage.local, bound to the broker, and never the handoff or verifier', async () => {
      const verifier = createCodeVerifier();
      const h = await createHarness({ verifier: () => verifier });
      h.identity.grant(h.broker, LICENCE_A);

      await connect(h);

      expect((await h.state.read()).session).toEqual({
        sessionToken: 'session-2',
        brokerUrl: BROKER,
      });
      const stored = await allStoredText();
      expect(stored).not.toContain(verifier);
      expect(stored).not.toContain('handoff-1');
      expect(await fakeBrowser.storage.local.get(`${STATE_KEY.slice(6)}$`)).toEqual({
        [`${STATE_KEY.slice(6)}$`]: { v: STATE_VERSION },
      });
      // Nothing logged carries a secret either.
      expect(JSON.stringify(h.events)).not.toMatch(/session-2|handoff|verifier/);
    });
  });

  describe('when a session already exists', () => {
    it('sends its token so that a second licence joins the same session', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      await connect(h);
      const token = (await h.state.read()).session?.sessionToken;

      h.identity.grant(h.broker, LICENCE_B);
      await connect(h);

      const redeems = h.broker.requestsTo('POST', routes.session);
      expect(redeems[1]?.authorization).toBe(`Bearer ${token}`);
      expect((await h.state.read()).session?.sessionToken).toBe(token);
      expect(h.broker.sessionTokens()).toEqual([token]);
      const view = await h.view();
      expect(view.connections.map((c) => [c.id, c.status, c.user.status])).toEqual([
        ['conn-a', 'connected', 'loaded'],
        ['conn-b', 'connected', 'loaded'],
      ]);
      expect(h.events).toContainEqual(['flow.succeeded', { joined: true, reconnected: false }]);
    });

    it('reconnects a disconnected licence under the same connection id', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      await connect(h);
      const token = (await h.state.read()).session?.sessionToken ?? '';
      h.broker.disconnect(token, 'conn-a', 'refresh_rejected');
      await h.send['view.refresh'](null);
      expect((await h.view()).connections[0]).toMatchObject({
        status: 'disconnected',
        disconnectedReason: 'refresh_rejected',
      });

      h.identity.grant(h.broker, LICENCE_A);
      await connect(h, 'conn-a');

      const view = await h.view();
      expect(view.flow).toMatchObject({
        status: 'succeeded',
        connectionId: 'conn-a',
        reconnected: true,
      });
      expect(view.connections).toHaveLength(1);
      expect(view.connections[0]).toMatchObject({
        id: 'conn-a',
        status: 'connected',
        disconnectedReason: null,
      });
    });

    it('starts afresh when the broker no longer knows the old token, and drops the old list', async () => {
      const h = await createHarness({
        seed: () =>
          fakeBrowser.storage.local.set({
            state: {
              settings: { brokerUrl: null, locale: null },
              session: { sessionToken: 'expired', brokerUrl: BROKER },
            },
            state$: { v: 2 },
          }),
      });
      h.identity.grant(h.broker, LICENCE_B);

      await connect(h);

      expect(h.broker.requestsTo('POST', routes.session)[0]?.authorization).toBe('Bearer expired');
      expect((await h.state.read()).session?.sessionToken).toBe('session-2');
      expect((await h.view()).connections.map((c) => c.id)).toEqual(['conn-b']);
    });

    it('never sends a token issued by another broker', async () => {
      const h = await createHarness({
        seed: () =>
          fakeBrowser.storage.local.set({
            state: {
              settings: { brokerUrl: null, locale: null },
              session: {
                sessionToken: 'other-broker-token',
                brokerUrl: 'https://old-broker.example',
              },
            },
            state$: { v: 2 },
          }),
      });
      h.identity.grant(h.broker, LICENCE_A);

      await connect(h);

      expect(h.broker.requests.every((r) => r.authorization !== 'Bearer other-broker-token')).toBe(
        true,
      );
      expect(h.broker.requests.every((r) => r.url.startsWith(`${BROKER}/`))).toBe(true);
    });
  });

  describe('when the user declines on the provider page', () => {
    it('ends with access_denied, redeems nothing and keeps the existing session', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      await connect(h);
      const before = await h.state.read();

      h.identity.redirectError('access_denied');
      await connect(h);

      const view = await h.view();
      expect(view.flow).toEqual({
        status: 'failed',
        problem: { code: 'access_denied' },
        reconnectId: null,
        at: T0,
      });
      expect(h.broker.requestsTo('POST', routes.session)).toHaveLength(1);
      expect(await h.state.read()).toEqual(before);
      expect(view.connections.map((c) => c.id)).toEqual(['conn-a']);
    });
  });

  describe('when the broker ends the flow with an error', () => {
    it.each(AUTH_REDIRECT_ERRORS)('maps ?error=%s to that problem code', async (error) => {
      const h = await createHarness();
      h.identity.redirectError(error);

      await connect(h);

      expect((await h.view()).flow).toMatchObject({ status: 'failed', problem: { code: error } });
      expect(h.broker.requestsTo('POST', routes.session)).toHaveLength(0);
      expect((await h.state.read()).session).toBeNull();
    });

    it.each([
      ['an unknown error code', `${REDIRECT_URL}?error=teapot`],
      ['neither handoff nor error', REDIRECT_URL],
      ['another origin', 'https://evil.example/?handoff=stolen'],
      ['not a URL', 'not a url'],
    ])('treats a final URL with %s as unexpected', async (_case, finalUrl) => {
      const h = await createHarness();
      h.identity.endAt(finalUrl);

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'unexpected' },
      });
      expect(h.broker.requestsTo('POST', routes.session)).toHaveLength(0);
    });
  });

  describe('when the authorization window does not finish', () => {
    it.each([
      ['Chrome', 'The user did not approve access.'],
      ['Firefox', 'User cancelled or denied access.'],
    ])('a window closed in %s is a cancel, not an error', async (_browser, message) => {
      const h = await createHarness();
      h.identity.reject(message);

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'cancelled' },
      });
    });

    it('a page that cannot load is auth_page_failed', async () => {
      const h = await createHarness();
      h.identity.reject('Authorization page could not be loaded.');

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'auth_page_failed' },
      });
    });

    it('is reported as interrupted when a new worker finds a flow the old one never finished', async () => {
      const h = await createHarness({
        seed: () =>
          fakeBrowser.storage.session.set({
            view: {
              brokerUrl: BROKER,
              locale: null,
              signedIn: false,
              flow: {
                status: 'running',
                locale: 'nl',
                reconnectId: 'conn-a',
                startedAt: T0 - 60_000,
              },
              sync: { status: 'idle', problem: null, at: null },
              connections: [],
              notice: null,
            },
          }),
      });

      expect((await h.view()).flow).toEqual({
        status: 'failed',
        problem: { code: 'interrupted' },
        reconnectId: 'conn-a',
        at: T0,
      });
    });
  });

  describe('when the handoff cannot be redeemed', () => {
    it('ends with invalid_grant and stores no session', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      h.broker.fail('POST', routes.session, () => errorResponse('invalid_grant'));

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'invalid_grant' },
      });
      expect((await h.state.read()).session).toBeNull();
      expect(h.events).toContainEqual(['flow.failed', { code: 'invalid_grant' }]);
    });

    it('keeps the Retry-After of a 503 as the time to try again', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      h.broker.fail('POST', routes.session, () =>
        errorResponse('upstream_unavailable', { 'Retry-After': '30' }),
      );

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'upstream_unavailable', retryAt: T0 + 30_000 },
      });
    });

    it('treats a 201 whose body does not match the contract as unexpected', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      h.broker.fail('POST', routes.session, () => jsonResponse(201, { session_token: 42 }));

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'unexpected' },
      });
      expect((await h.state.read()).session).toBeNull();
    });
  });

  describe('before opening the authorization window', () => {
    it('reports an unreachable broker without opening the window', async () => {
      const h = await createHarness();
      h.broker.unreachable = true;

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'broker_unreachable' },
      });
      expect(h.identity.launched).toHaveLength(0);
    });

    it("says at once that the broker does not accept this browser's redirect URL, and opens nothing", async () => {
      const h = await createHarness();
      h.broker.acceptedRedirects = ['https://another-extension.chromiumapp.org/'];
      h.identity.grant(h.broker, LICENCE_A);

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'redirect_not_allowed', redirectUrl: REDIRECT_URL },
      });
      expect(h.identity.launched).toHaveLength(0);
      const asked = h.broker.requests.find((r) => r.path === routes.redirectCheck);
      expect(new URL(asked!.url).searchParams.get('redirect_uri')).toBe(REDIRECT_URL);
    });

    it('goes on when the broker predates the question (404)', async () => {
      const h = await createHarness();
      h.broker.fail('GET', routes.redirectCheck, () => new Response('', { status: 404 }));
      h.identity.grant(h.broker, LICENCE_A);

      await connect(h);

      expect((await h.view()).flow).toMatchObject({ status: 'succeeded' });
    });

    it('asks for the host permission first when it is missing, and calls nothing', async () => {
      const h = await createHarness({ granted: [] });

      await connect(h);

      expect((await h.view()).flow).toMatchObject({
        status: 'failed',
        problem: { code: 'permission_missing' },
      });
      expect(h.broker.requests).toHaveLength(0);
      expect(h.identity.launched).toHaveLength(0);
    });
  });

  describe('while a flow runs', () => {
    it('shows it as running, and a second start joins it instead of opening another window', async () => {
      const h = await createHarness();
      const window = h.identity.hold();

      const first = await h.send['flow.start']({ locale: 'nl', reconnectId: null });
      await window.opened;
      const second = await h.send['flow.start']({ locale: 'fr', reconnectId: null });

      expect(second).toEqual(first);
      expect((await h.view()).flow).toEqual(first);
      window.finish(
        (url) =>
          `${REDIRECT_URL}?handoff=${h.broker.issueHandoff(LICENCE_A, url.searchParams.get('code_challenge') ?? '')}`,
      );
      await h.background.idle();
      expect(h.identity.launched).toHaveLength(1);
      expect((await h.view()).flow).toMatchObject({ status: 'succeeded' });
    });

    it('lets the next flow start as soon as the previous one has its outcome, while the list still refreshes', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENCE_A);
      const refreshing = h.broker.hold('GET', routes.connections);

      await h.send['flow.start']({ locale: 'nl', reconnectId: null });
      await refreshing.reached;
      expect((await h.view()).flow).toMatchObject({ status: 'succeeded' });
      h.identity.grant(h.broker, LICENCE_B);
      const next = await h.send['flow.start']({ locale: 'fr', reconnectId: null });
      refreshing.release();
      await h.background.idle();

      expect(next).toMatchObject({ status: 'running', locale: 'fr' });
      expect(h.identity.launched).toHaveLength(2);
      expect((await h.view()).connections.map((c) => c.id)).toEqual(['conn-a', 'conn-b']);
    });

    it('marks the card being reconnected, and a failed reconnect remembers which licence it was for', async () => {
      const h = await createHarness();
      h.identity.redirectError('access_denied');

      await connect(h, 'conn-a');

      expect((await h.view()).flow).toMatchObject({ status: 'failed', reconnectId: 'conn-a' });
    });
  });

  it('only ever talks to the broker it is configured for', async () => {
    const h = await createHarness();
    h.identity.grant(h.broker, LICENCE_A);
    await connect(h);
    expect(new Set(h.broker.requests.map((r) => new URL(r.url).origin))).toEqual(new Set([BROKER]));
    expect(h.granted.has(hostPermissionFor(BROKER))).toBe(true);
  });
});
