import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import type { ApiChange } from '../api.ts';
import { emptyView, type ConnectionView, type Notice, type View } from '../state/view.ts';
import { errorResponse } from '../testing/fake-broker.ts';
import {
  BROKER,
  connect,
  createHarness,
  LICENSE_A,
  LICENSE_B,
  SESSION_TOKEN,
  signedIn,
} from '../testing/harness.ts';
import { badgeFor, type Badge } from './badge.ts';

const TOKEN = SESSION_TOKEN;

/** The icon with no badge: its title is the extension's name. */
const PLAIN = { text: '', title: 'Baton', color: '#5F5D5B' };
const RECONNECT_ONE = {
  text: '!',
  title: 'Baton: a licence needs reconnecting',
  color: '#A14A06',
};
const SESSION_ENDED = {
  text: '!',
  title: 'Baton: your session has ended. Connect your licence again.',
  color: '#B3261E',
};

const card = (id: string, status: ConnectionView['status']): ConnectionView => ({
  id,
  status,
  apiOrigin: 'https://api.provider.example',
  connectedAt: '2025-01-15T09:30:00.000Z',
  accessExpiresAt: null,
  disconnectedReason: null,
  user: { status: 'loading' },
});
const view = (signedIn: boolean, connections: ConnectionView[], notice: Notice | null = null) =>
  ({ ...emptyView(BROKER), signedIn, connections, notice }) satisfies View;

describe('badgeFor (what the badge says for a view)', () => {
  it.each<[string, View, Badge]>([
    ['signed out, never signed in', view(false, []), { kind: 'none' }],
    ['every licence connected', view(true, [card('a', 'connected')]), { kind: 'none' }],
    ['signed in, no licence', view(true, []), { kind: 'none' }],
    [
      'a licence disconnected',
      view(true, [card('a', 'connected'), card('b', 'disconnected')]),
      { kind: 'reconnect', count: 1 },
    ],
    [
      'two licences disconnected',
      view(true, [card('a', 'disconnected'), card('b', 'disconnected')]),
      { kind: 'reconnect', count: 2 },
    ],
    [
      'the session ended by the broker',
      view(false, [], { kind: 'session_ended' }),
      { kind: 'session_ended' },
    ],
    ['signed out by the user', view(false, [], { kind: 'signed_out' }), { kind: 'none' }],
    [
      'signed out by the user, the broker not told',
      view(false, [], { kind: 'signed_out_locally', problem: { code: 'broker_unreachable' } }),
      { kind: 'none' },
    ],
  ])('%s', (_label, v, expected) => {
    expect(badgeFor(v)).toEqual(expected);
  });
});

describe('the toolbar badge, set from the broker’s answers', () => {
  it('has none while every licence is connected', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual(PLAIN);
  });

  it('shows a licence the broker lists as disconnected, with a title saying so', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.disconnect(TOKEN, 'conn-b', 'refresh_rejected');

    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual(RECONNECT_ONE);
  });

  it('shows a grant the provider revoked (users.me answers reauthorization_required)', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('reauthorization_required'),
    );

    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual(RECONNECT_ONE);
  });

  it('counts the licences to reconnect in its title', async () => {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-a');
    h.broker.disconnect(TOKEN, 'conn-b');

    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual({
      ...RECONNECT_ONE,
      title: 'Baton: 2 licences need reconnecting',
    });
  });

  it('shows that the broker ended the session', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'));

    await h.send['view.refresh'](null);

    expect(await h.view()).toMatchObject({ signedIn: false, notice: { kind: 'session_ended' } });
    expect(await h.badge()).toEqual(SESSION_ENDED);
  });

  it('says nothing of a broker it cannot reach: the licences are as last known', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.unreachable = true;

    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual(PLAIN);
  });

  it('is written to the browser only when it changes', async () => {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-b');
    await h.send['view.refresh'](null);
    await h.send['view.refresh'](null);
    await h.send['view.refresh'](null);

    const shown = h.events.filter(([event]) => event === 'badge.shown');
    // Once at start-up (a new worker does not know what the last one showed), once for conn-b.
    expect(shown).toEqual([
      ['badge.shown', { kind: 'none' }],
      ['badge.shown', { kind: 'reconnect' }],
    ]);
  });

  it('is shown again by a new worker from the licences kept across a browser restart', async () => {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-b');
    await h.send['view.refresh'](null);
    // The browser forgets the badge when it closes.
    await fakeBrowser.action.setBadgeText({ text: '' });

    const restarted = await createHarness({ restart: true });

    expect(await restarted.badge()).toEqual(RECONNECT_ONE);
  });
});

describe('the toolbar badge, set from the integrator’s API calls', () => {
  it('an api.request that meets a disconnected licence sets it, and the change feed hears it', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    const heard: ApiChange[] = [];
    h.background.changes.subscribe((change) => heard.push(change));
    h.broker.fail('GET', '/connections/conn-a/api/invoices', () =>
      errorResponse('reauthorization_required'),
    );

    const answer = await h.api['api.request']({
      connectionId: 'conn-a',
      method: 'GET',
      path: 'invoices',
    });

    expect(answer).toMatchObject({ ok: false, error: { code: 'reauthorization_required' } });
    expect(await h.badge()).toEqual(RECONNECT_ONE);
    expect((await h.view()).connections[0]).toMatchObject({
      id: 'conn-a',
      status: 'disconnected',
      user: { status: 'failed', record: LICENSE_A.user },
    });
    expect(heard).toEqual([
      {
        kind: 'disconnected',
        connectionId: 'conn-a',
        apiOrigin: 'https://api.provider.example',
        reason: null,
      },
    ]);
  });

  it('an api.connections that lists a licence disconnected sets it, with the reason', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.disconnect(TOKEN, 'conn-b', 'refresh_rejected');

    await h.api['api.connections'](null);

    expect(await h.badge()).toEqual(RECONNECT_ONE);
    expect((await h.view()).connections[1]).toMatchObject({
      status: 'disconnected',
      disconnectedReason: 'refresh_rejected',
      user: { record: LICENSE_B.user },
    });
  });

  it('an API call that finds the session gone sets it', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'));

    await h.api['api.connections'](null);

    expect(await h.badge()).toEqual(SESSION_ENDED);
  });

  it('an answer from a session since ended is not applied to the next one', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    h.broker.override(
      'GET',
      '/connections/conn-a/api/invoices',
      async () => {
        arrived();
        await released;
        return errorResponse('reauthorization_required');
      },
      { once: true },
    );
    const calling = h.api['api.request']({
      connectionId: 'conn-a',
      method: 'GET',
      path: 'invoices',
    });
    await reached;
    // Meanwhile the user signs out and connects the same licence again: a new session, in which
    // the broker gives it the same id.
    await h.send['session.signOut'](null);
    h.identity.grant(h.broker, LICENSE_A);
    await connect(h);
    release();
    await calling;

    expect((await h.view()).connections.map((c) => [c.id, c.status])).toEqual([
      ['conn-a', 'connected'],
    ]);
    expect(await h.badge()).toEqual(PLAIN);
  });
});

describe('the toolbar badge clears once the cause is gone', () => {
  /** Signed in, conn-a disconnected by the provider, the badge showing. */
  async function needsReconnecting() {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-a', 'refresh_rejected');
    await h.send['view.refresh'](null);
    expect(await h.badge()).toEqual(RECONNECT_ONE);
    return h;
  }

  /** The broker ended the session, the badge showing. */
  async function sessionEnded() {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'), { once: true });
    await h.send['view.refresh'](null);
    expect(await h.badge()).toEqual(SESSION_ENDED);
    return h;
  }

  it('when the licence is reconnected through the flow', async () => {
    const h = await needsReconnecting();
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h, 'conn-a');

    expect((await h.view()).connections.map((c) => c.status)).toEqual(['connected', 'connected']);
    expect(await h.badge()).toEqual(PLAIN);
  });

  it('when the broker lists it connected again (a fixed state)', async () => {
    const h = await signedIn();
    h.broker.fail(
      'GET',
      '/connections/conn-a/api/users.me',
      () => errorResponse('reauthorization_required'),
      { once: true },
    );
    await h.send['view.refresh'](null);
    expect(await h.badge()).toEqual(RECONNECT_ONE);

    await h.send['view.refresh'](null);

    expect(await h.badge()).toEqual(PLAIN);
  });

  it('when the user disconnects (removes) the licence', async () => {
    const h = await needsReconnecting();

    await h.send['connection.disconnect']({ connectionId: 'conn-a' });

    expect(await h.badge()).toEqual(PLAIN);
  });

  it('when the user signs out deliberately, and no "session ended" takes its place', async () => {
    const h = await needsReconnecting();

    await h.send['session.signOut'](null);

    expect(await h.view()).toMatchObject({ signedIn: false, notice: { kind: 'signed_out' } });
    expect(await h.badge()).toEqual(PLAIN);
  });

  it('when the user signs out deliberately and the broker cannot be told', async () => {
    const h = await needsReconnecting();
    h.broker.unreachable = true;

    await h.send['session.signOut'](null);

    expect(await h.badge()).toEqual(PLAIN);
  });

  it('after the session ended, when the user signs in again', async () => {
    const h = await sessionEnded();
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h);

    expect(await h.view()).toMatchObject({ signedIn: true });
    expect(await h.badge()).toEqual(PLAIN);
  });

  it('after the session ended, when the user dismisses the notice (choosing to stay out)', async () => {
    const h = await sessionEnded();

    await h.send['notice.dismiss'](null);

    expect(await h.badge()).toEqual(PLAIN);
  });
});

describe('the badge’s title, in the browser’s language', () => {
  it.each([
    [
      'fr',
      'Baton : une licence doit être reconnectée',
      'Baton : 2 licences doivent être reconnectées',
    ],
    [
      'nl',
      'Baton: een licentie moet opnieuw gekoppeld worden',
      'Baton: 2 licenties moeten opnieuw gekoppeld worden',
    ],
  ] as const)('%s', async (uiLocale, one, two) => {
    const h = await createHarness({
      uiLocale,
      seed: () =>
        fakeBrowser.storage.local.set({
          state: {
            settings: { brokerUrl: null, locale: null },
            session: { sessionToken: TOKEN, brokerUrl: BROKER },
          },
          state$: { v: 2 },
        }),
    });
    h.broker.seedSession(TOKEN, [LICENSE_A, LICENSE_B]);
    expect((await h.badge()).title).toBe('Baton');

    h.broker.disconnect(TOKEN, 'conn-a');
    await h.send['view.refresh'](null);
    expect((await h.badge()).title).toBe(one);

    h.broker.disconnect(TOKEN, 'conn-b');
    await h.send['view.refresh'](null);
    expect((await h.badge()).title).toBe(two);

    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'));
    await h.send['view.refresh'](null);
    expect((await h.badge()).title).toBe(
      uiLocale === 'fr'
        ? 'Baton : votre session a pris fin. Connectez à nouveau votre licence.'
        : 'Baton: uw sessie is beëindigd. Koppel uw licentie opnieuw.',
    );
  });
});
