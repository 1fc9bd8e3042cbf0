import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  LAST_VIEW_VERSION,
  lastViewCache,
  lastViewItem,
  lastViewOf,
  parseLastView,
  viewFromLastView,
  type LastView,
} from './last-view.ts';
import { errorResponse } from '../testing/fake-broker.ts';
import { STATE_VERSION } from './persisted.ts';
import {
  allStoredText,
  BROKER as HARNESS_BROKER,
  createHarness,
  LICENSE_A,
  sessionVault,
  T0,
} from '../testing/harness.ts';
import { createViewStore, emptyView, viewItem, type ConnectionView, type View } from './view.ts';

const BROKER = 'https://broker.example.be';
const AT = Date.UTC(2026, 10, 24, 12);
const RECORD = { id: 40217, name: 'Lotte Vermeulen', email: 'lotte@example.be' };

const connected: ConnectionView = {
  id: 'c1',
  status: 'connected',
  apiOrigin: 'https://api.provider.example',
  connectedAt: '2026-11-01T10:00:00Z',
  accessExpiresAt: '2026-11-24T13:00:00Z',
  disconnectedReason: null,
  user: { status: 'loaded', record: RECORD, fetchedAt: AT },
};
const disconnected: ConnectionView = {
  ...connected,
  id: 'c2',
  status: 'disconnected',
  disconnectedReason: 'refresh_rejected',
  user: { status: 'failed', problem: { code: 'reauthorization_required' }, record: RECORD },
};

const signedIn: View = {
  ...emptyView(BROKER),
  signedIn: true,
  sync: { status: 'ok', problem: null, at: AT },
  connections: [connected, disconnected],
  notice: { kind: 'disconnected', connectionId: 'c0' },
};

const kept: LastView = {
  brokerUrl: BROKER,
  at: AT,
  connections: [
    {
      id: 'c1',
      status: 'connected',
      apiOrigin: 'https://api.provider.example',
      connectedAt: '2026-11-01T10:00:00Z',
      accessExpiresAt: '2026-11-24T13:00:00Z',
      disconnectedReason: null,
      record: RECORD,
    },
    {
      id: 'c2',
      status: 'disconnected',
      apiOrigin: 'https://api.provider.example',
      connectedAt: '2026-11-01T10:00:00Z',
      accessExpiresAt: '2026-11-24T13:00:00Z',
      disconnectedReason: 'refresh_rejected',
      record: RECORD,
    },
  ],
};

beforeEach(() => {
  fakeBrowser.reset();
});

describe('what is kept of a view (local:lastView)', () => {
  it('is version 1', () => {
    expect(LAST_VIEW_VERSION).toBe(1);
  });

  it('keeps the licences and their records while signed in; no flow, notice or problem', () => {
    expect(lastViewOf(signedIn)).toEqual(kept);
  });

  it('keeps nothing when signed out or without a licence', () => {
    expect(lastViewOf({ ...signedIn, signedIn: false })).toBeNull();
    expect(lastViewOf({ ...signedIn, connections: [] })).toBeNull();
  });

  it('paints as signed in, each record shown while a newer one loads, nothing running', () => {
    expect(viewFromLastView(kept)).toEqual({
      ...emptyView(BROKER),
      signedIn: true,
      sync: { status: 'idle', problem: null, at: AT },
      connections: [{ ...connected, user: { status: 'loading', record: RECORD } }, disconnected],
    });
  });
});

describe('reading it back', () => {
  it('reads what it wrote', () => {
    expect(parseLastView(JSON.parse(JSON.stringify(kept)))).toEqual(kept);
  });

  it.each<[string, unknown]>([
    ['nothing', undefined],
    ['not an object', 'x'],
    ['no broker', { ...kept, brokerUrl: '' }],
    ['no licence', { ...kept, connections: [] }],
    ['a licence without an id', { ...kept, connections: [{ ...kept.connections[0], id: 7 }] }],
    [
      'a licence in no known state',
      { ...kept, connections: [{ ...kept.connections[0], status: 'pending' }] },
    ],
  ])('is no cache at all when it holds %s', (_name, value) => {
    expect(parseLastView(value)).toBeNull();
  });

  it('forgets a reason it does not know rather than show a blank sentence', () => {
    const odd = { ...kept, connections: [{ ...kept.connections[1], disconnectedReason: 'gone' }] };
    expect(parseLastView(odd)?.connections[0]?.disconnectedReason).toBeNull();
  });
});

describe('the view store with the cache', () => {
  const store = () => createViewStore(viewItem, () => BROKER, lastViewCache(lastViewItem));

  it('keeps the licences of each view written, and drops them when the session ends', async () => {
    const view = store();
    await view.update(() => signedIn);
    // Stored without version metadata, which WXT reads as version 1: a v2 migrates from there.
    expect(await fakeBrowser.storage.local.get(null)).toEqual({ lastView: kept });

    await view.update((v) => ({ ...v, signedIn: false, connections: [] }));
    expect(await fakeBrowser.storage.local.get(['lastView', 'lastView$'])).toEqual({});
  });

  it('after a browser restart (storage.session empty) starts from the kept licences', async () => {
    await store().update(() => signedIn);
    await fakeBrowser.storage.session.clear();

    expect(await store().read()).toEqual(viewFromLastView(kept));
  });

  it('prefers the view in storage.session, which is newer', async () => {
    await store().update(() => signedIn);
    await viewItem.setValue({ ...signedIn, connections: [connected] });

    expect((await store().read()).connections).toEqual([connected]);
  });
});

describe('with the background', () => {
  const TOKEN = 'session-token-1';
  const user = LICENSE_A.user as Record<string, unknown>;
  const keptRecord = { ...user, name: 'An Peeters (as kept)' };

  /** A browser restarted with a session and the licenses kept: storage.session is empty. */
  async function restarted() {
    const h = await createHarness({
      seed: async () => {
        await fakeBrowser.storage.local.set({
          state: { settings: { brokerUrl: null, locale: null }, lastSignInLocale: null },
          state$: { v: STATE_VERSION },
        });
        await sessionVault().write({ sessionToken: TOKEN, brokerUrl: HARNESS_BROKER });
        await lastViewItem.setValue({
          brokerUrl: HARNESS_BROKER,
          at: T0 - 60_000,
          connections: [
            {
              id: LICENSE_A.connectionId,
              status: 'connected',
              apiOrigin: 'https://api.provider.example',
              connectedAt: '2025-01-10T08:00:00Z',
              accessExpiresAt: null,
              disconnectedReason: null,
              record: keptRecord,
            },
          ],
        });
      },
    });
    h.broker.seedSession(TOKEN, [LICENSE_A]);
    return h;
  }

  it('starts from the kept licences, and the refresh updates them in place', async () => {
    const h = await restarted();
    const before = await h.view();
    expect(before.signedIn).toBe(true);
    expect(before.connections.map((c) => c.user.record)).toEqual([keptRecord]);

    const users = h.broker.hold('GET', /users\.me$/);
    const refreshed = h.send['view.refresh'](null);
    await users.reached;
    // While the broker answers, the license is still there, with its last record.
    expect((await h.view()).connections.map((c) => c.user)).toEqual([
      { status: 'loading', record: keptRecord },
    ]);
    users.release();

    expect((await refreshed).connections.map((c) => c.user.record)).toEqual([LICENSE_A.user]);
    expect((await lastViewItem.getValue())?.connections[0]?.record).toEqual(LICENSE_A.user);
  });

  it('signing out forgets the kept licences with the session', async () => {
    const h = await restarted();
    await h.send['view.refresh'](null);

    await h.send['session.signOut'](null);

    expect(await lastViewItem.getValue()).toBeNull();
    expect(await allStoredText()).not.toContain('An Peeters');
  });

  it('a session the broker no longer knows forgets them too', async () => {
    const h = await restarted();
    h.broker.fail('GET', '/connections', () => errorResponse('invalid_session'));

    await h.send['view.refresh'](null);

    expect(await lastViewItem.getValue()).toBeNull();
  });
});
