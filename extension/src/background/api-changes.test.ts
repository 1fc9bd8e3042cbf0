import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { API_CHANGES_PORT, type ApiChange } from '../api.ts';
import { parseApiOrigins, type ApiOrigin } from '../api-origins.ts';
import { emptyView, type ConnectionView, type View } from '../state/view.ts';
import { connectTo, delivered, type FakePort } from '../testing/fake-port.ts';
import {
  connect,
  createHarness,
  LICENSE_A,
  SESSION_TOKEN,
  signedIn,
  type Harness,
} from '../testing/harness.ts';
import { errorResponse } from '../testing/fake-broker.ts';
import { createApiChangesListener, viewChanges } from './api-changes.ts';
import type { MessageSender } from './senders.ts';

/** LICENSE_A's license API (the fake broker's default). */
const A_ORIGIN = 'https://api.provider.example';

const card = (
  id: string,
  status: ConnectionView['status'] = 'connected',
  reason: ConnectionView['disconnectedReason'] = null,
): ConnectionView => ({
  id,
  status,
  apiOrigin: `https://${id}.provider.example`,
  connectedAt: '2025-01-15T09:00:00Z',
  accessExpiresAt: null,
  disconnectedReason: reason,
  user: { status: 'loaded', record: { name: 'Lotte' }, fetchedAt: 0 },
});
const view = (signedIn: boolean, connections: ConnectionView[]): View => ({
  ...emptyView('https://broker.example'),
  signedIn,
  connections,
});

describe('viewChanges: what a write of the view changed, for the integrator’s API', () => {
  it.each<[string, View, View, ApiChange[]]>([
    [
      'a licence connected',
      view(false, []),
      view(true, [card('a')]),
      [{ kind: 'connected', connectionId: 'a', apiOrigin: 'https://a.provider.example' }],
    ],
    [
      'a licence disconnected, with the reason',
      view(true, [card('a'), card('b')]),
      view(true, [card('a'), card('b', 'disconnected', 'refresh_rejected')]),
      [
        {
          kind: 'disconnected',
          connectionId: 'b',
          apiOrigin: 'https://b.provider.example',
          reason: 'refresh_rejected',
        },
      ],
    ],
    [
      'a licence reconnected',
      view(true, [card('a', 'disconnected')]),
      view(true, [card('a')]),
      [{ kind: 'connected', connectionId: 'a', apiOrigin: 'https://a.provider.example' }],
    ],
    [
      'a licence removed',
      view(true, [card('a'), card('b')]),
      view(true, [card('b')]),
      [{ kind: 'removed', connectionId: 'a', apiOrigin: 'https://a.provider.example' }],
    ],
    [
      'the session ended: signed_out alone, not each licence',
      view(true, [card('a'), card('b')]),
      view(false, []),
      [{ kind: 'signed_out' }],
    ],
    [
      'a user record reloaded: nothing',
      view(true, [card('a')]),
      view(true, [{ ...card('a'), user: { status: 'loading' } }]),
      [],
    ],
    ['nothing at all', view(false, []), view(false, []), []],
  ])('%s', (_name, before, after, changes) => {
    expect(viewChanges(before, after)).toEqual(changes);
  });
});

describe('the background’s changes, as its parts make them', () => {
  function heard(h: Harness): ApiChange[] {
    const changes: ApiChange[] = [];
    h.background.changes.subscribe((change) => changes.push(change));
    return changes;
  }

  it('connecting a licence, disconnecting it, and signing out, in that order', async () => {
    const h = await createHarness();
    const changes = heard(h);
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h);
    await h.send['connection.disconnect']({ connectionId: 'conn-a' });
    await h.send['session.signOut'](null);

    expect(changes).toEqual([
      { kind: 'connected', connectionId: 'conn-a', apiOrigin: A_ORIGIN },
      { kind: 'removed', connectionId: 'conn-a', apiOrigin: A_ORIGIN },
      { kind: 'signed_out' },
    ]);
  });

  it('a licence the broker finds disconnected, with its reason', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    const changes = heard(h);
    h.broker.disconnect(SESSION_TOKEN, 'conn-b', 'refresh_rejected');

    await h.send['view.refresh'](null);

    expect(changes).toEqual([
      {
        kind: 'disconnected',
        connectionId: 'conn-b',
        apiOrigin: 'https://api-eu2.provider.example',
        reason: 'refresh_rejected',
      },
    ]);
  });

  it('the session ended by the broker, on an API call', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    const changes = heard(h);
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('invalid_session'),
    );

    await h.api['api.request']({ connectionId: 'conn-a', method: 'GET', path: 'users.me' });

    expect(changes).toEqual([{ kind: 'signed_out' }]);
  });

  it('carries no token and no user record', async () => {
    const h = await createHarness();
    const changes = heard(h);
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h);
    await h.send['session.signOut'](null);

    const text = JSON.stringify(changes);
    expect(changes.length).toBeGreaterThan(1);
    for (const secret of [...h.broker.sessionTokens(), SESSION_TOKEN, 'an.peeters@example.be'])
      expect(text).not.toContain(secret);
  });
});

describe('runtime.onConnect: who hears of changes', () => {
  const self = {
    id: fakeBrowser.runtime.id,
    pagesBase: `chrome-extension://${fakeBrowser.runtime.id}/`,
  };
  const origins: readonly ApiOrigin[] = (() => {
    const parsed = parseApiOrigins('https://app.example.com');
    if (!parsed.ok) throw new Error('origins');
    return parsed.origins;
  })();
  const contentScript = (origin: string): MessageSender => ({
    id: self.id,
    url: `${origin}/billing`,
    origin,
    tab: { id: 3 },
  });

  /** A page that opens the changes port as `sender`, and what its end of the port receives. */
  async function open(h: Harness, sender: MessageSender, name = API_CHANGES_PORT) {
    const log: string[] = [];
    const messages: unknown[] = [];
    const listener = createApiChangesListener(h.background.changes, {
      self,
      origins,
      log: (event, fields) => log.push(`${event} ${JSON.stringify(fields)}`),
    });
    const wire = connectTo(listener, () => sender);
    const page: FakePort = wire.connect({ name });
    let disconnected = false;
    page.onMessage.addListener((message) => messages.push(message));
    page.onDisconnect.addListener(() => (disconnected = true));
    await delivered();
    return { page, messages, log, disconnected: () => disconnected };
  }

  it('a content script on a listed origin is told it listens, then hears each change', async () => {
    const h = await createHarness();
    const page = await open(h, contentScript('https://app.example.com'));
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h);
    await h.send['session.signOut'](null);
    await delivered();

    expect(page.messages).toEqual([
      { type: 'api.listening' },
      {
        type: 'api.change',
        change: { kind: 'connected', connectionId: 'conn-a', apiOrigin: A_ORIGIN },
      },
      { type: 'api.change', change: { kind: 'signed_out' } },
    ]);
    expect(page.disconnected()).toBe(false);
  });

  it('an extension page hears them too', async () => {
    const h = await signedIn();
    const page = await open(h, { id: self.id, url: `${self.pagesBase}dashboard.html` });

    await h.send['session.signOut'](null);
    await delivered();

    expect(page.messages).toEqual([
      { type: 'api.listening' },
      { type: 'api.change', change: { kind: 'signed_out' } },
    ]);
  });

  it('a content script on an origin not listed is refused, disconnected, and hears nothing', async () => {
    const h = await createHarness();
    const page = await open(h, contentScript('https://elsewhere.example.com'));
    h.identity.grant(h.broker, LICENSE_A);

    await connect(h);
    await delivered();

    expect(page.messages).toEqual([
      {
        type: 'api.refused',
        error: { code: 'origin_not_allowed', message: expect.any(String) },
      },
    ]);
    expect(page.disconnected()).toBe(true);
    expect(page.log).toEqual(['api.refused {"reason":"origin_not_allowed"}']);
  });

  it.each<[string, MessageSender]>([
    ['another extension', { id: 'another', url: 'chrome-extension://another/x.html' }],
    [
      'a sandboxed frame',
      { id: self.id, url: 'https://app.example.com/x', origin: 'null', tab: { id: 3 } },
    ],
  ])('%s is disconnected without a word', async (_name, sender) => {
    const h = await createHarness();
    const page = await open(h, sender);

    expect(page.messages).toEqual([]);
    expect(page.disconnected()).toBe(true);
  });

  it('leaves a port of another name alone', async () => {
    const h = await createHarness();
    const page = await open(h, contentScript('https://app.example.com'), 'something-else');

    expect(page.messages).toEqual([]);
    expect(page.disconnected()).toBe(false);
  });

  it('stops sending to a page once it has gone', async () => {
    const h = await signedIn();
    const page = await open(h, contentScript('https://app.example.com'));

    page.page.disconnect();
    await delivered();
    await h.send['session.signOut'](null);
    await delivered();

    expect(page.messages).toEqual([{ type: 'api.listening' }]);
  });
});
