import { routes } from '@baton/shared';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { hostPermissionFor } from '../broker-url.ts';
import { errorResponse, jsonResponse } from '../testing/fake-broker.ts';
import {
  BROKER,
  connect,
  createHarness,
  LICENSE_A,
  LICENSE_B,
  REDIRECT_URL,
  T0,
} from '../testing/harness.ts';

describe('flow.start', () => {
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
      h.identity.grant(h.broker, LICENSE_A);
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
      h.identity.grant(h.broker, LICENSE_A);
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
      h.identity.grant(h.broker, LICENSE_A);
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
      h.identity.grant(h.broker, LICENSE_A);

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
      h.identity.grant(h.broker, LICENSE_A);

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
          `${REDIRECT_URL}?handoff=${h.broker.issueHandoff(LICENSE_A, url.searchParams.get('code_challenge') ?? '')}`,
      );
      await h.background.idle();
      expect(h.identity.launched).toHaveLength(1);
      expect((await h.view()).flow).toMatchObject({ status: 'succeeded' });
    });

    it('lets the next flow start as soon as the previous one has its outcome, while the list still refreshes', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENSE_A);
      const refreshing = h.broker.hold('GET', routes.connections);

      await h.send['flow.start']({ locale: 'nl', reconnectId: null });
      await refreshing.reached;
      expect((await h.view()).flow).toMatchObject({ status: 'succeeded' });
      h.identity.grant(h.broker, LICENSE_B);
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
    h.identity.grant(h.broker, LICENSE_A);
    await connect(h);
    expect(new Set(h.broker.requests.map((r) => new URL(r.url).origin))).toEqual(new Set([BROKER]));
    expect(h.granted.has(hostPermissionFor(BROKER))).toBe(true);
  });
});
