import { AUTH_REDIRECT_ERRORS, codeChallengeS256, createCodeVerifier, routes } from '@baton/shared';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { STATE_KEY, STATE_VERSION } from '../state/persisted.ts';
import {
  allStoredText,
  BROKER,
  connect,
  createHarness,
  LICENSE_A,
  LICENSE_B,
  REDIRECT_URL,
  sessionVault,
  T0,
} from '../testing/harness.ts';

describe('flow.start', () => {
  describe('when the user signs in and picks a licence', () => {
    it('answers at once with the running flow, then ends connected with the licence shown', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENSE_A);

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
        user: { status: 'loaded', record: LICENSE_A.user },
      });
      expect(view.sync).toEqual({ status: 'ok', problem: null, at: T0 });
    });

    it('opens /auth/start with the locale, the redirect URL and an S256 challenge of the verifier it redeems', async () => {
      const verifier = createCodeVerifier();
      const h = await createHarness({ verifier: () => verifier });
      h.identity.grant(h.broker, LICENSE_A);

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

    it('keeps the session token in the vault, bound to the broker, and never the handoff or verifier', async () => {
      const verifier = createCodeVerifier();
      const h = await createHarness({ verifier: () => verifier });
      h.identity.grant(h.broker, LICENSE_A);

      await connect(h);

      expect((await h.state.read()).session).toEqual({
        sessionToken: 'session-2',
        brokerUrl: BROKER,
      });
      expect(await sessionVault().read()).toEqual({ sessionToken: 'session-2', brokerUrl: BROKER });
      expect(JSON.stringify(await fakeBrowser.storage.local.get(null))).not.toContain('session-2');
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
      h.identity.grant(h.broker, LICENSE_A);
      await connect(h);
      const token = (await h.state.read()).session?.sessionToken;

      h.identity.grant(h.broker, LICENSE_B);
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
      h.identity.grant(h.broker, LICENSE_A);
      await connect(h);
      const token = (await h.state.read()).session?.sessionToken ?? '';
      h.broker.disconnect(token, 'conn-a', 'refresh_rejected');
      await h.send['view.refresh'](null);
      expect((await h.view()).connections[0]).toMatchObject({
        status: 'disconnected',
        disconnectedReason: 'refresh_rejected',
      });

      h.identity.grant(h.broker, LICENSE_A);
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
      h.identity.grant(h.broker, LICENSE_B);

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
      h.identity.grant(h.broker, LICENSE_A);

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
      h.identity.grant(h.broker, LICENSE_A);
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
});
