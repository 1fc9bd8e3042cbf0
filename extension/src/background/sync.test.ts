import { BROKER_ERROR_HEADER, routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { errorResponse, jsonResponse } from '../testing/fake-broker.ts';
import {
  BROKER,
  createHarness,
  LICENSE_A,
  LICENSE_B,
  SESSION_TOKEN,
  signedIn,
  T0,
} from '../testing/harness.ts';

const TOKEN = SESSION_TOKEN;

describe('view.refresh', () => {
  it('when signed out, shows no licence and calls nothing', async () => {
    const h = await createHarness();

    const view = await h.send['view.refresh'](null);

    expect(view).toMatchObject({ signedIn: false, connections: [], sync: { status: 'idle' } });
    expect(h.broker.requests).toHaveLength(0);
  });

  it('lists every connection with its user record, one card each', async () => {
    const h = await signedIn();

    const view = await h.send['view.refresh'](null);

    expect(view.signedIn).toBe(true);
    expect(view.locale).toBe('fr');
    expect(view.connections.map((c) => [c.id, c.status, c.user])).toEqual([
      ['conn-a', 'connected', { status: 'loaded', record: LICENSE_A.user, fetchedAt: T0 }],
      ['conn-b', 'connected', { status: 'loaded', record: LICENSE_B.user, fetchedAt: T0 }],
    ]);
    expect(view.sync).toEqual({ status: 'ok', problem: null, at: T0 });
    expect(h.broker.requests.map((r) => `${r.method} ${r.path} ${r.authorization}`)).toEqual([
      `GET /connections Bearer ${TOKEN}`,
      `GET /connections/conn-a/api/users.me Bearer ${TOKEN}`,
      `GET /connections/conn-b/api/users.me Bearer ${TOKEN}`,
    ]);
  });

  it('shows a disconnected licence with its reason and the last record it had, without asking for it', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.disconnect(TOKEN, 'conn-b', 'api_url_not_allowed');
    h.broker.requests.length = 0;

    const view = await h.send['view.refresh'](null);

    expect(view.connections[1]).toMatchObject({
      id: 'conn-b',
      status: 'disconnected',
      disconnectedReason: 'api_url_not_allowed',
      user: {
        status: 'failed',
        problem: { code: 'reauthorization_required' },
        record: LICENSE_B.user,
      },
    });
    expect(h.broker.requestsTo('GET', /conn-b\/api/)).toHaveLength(0);
  });

  it('marks a connection disconnected when its user record answers reauthorization_required', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('reauthorization_required'),
    );

    const view = await h.send['view.refresh'](null);

    expect(view.connections[0]).toMatchObject({
      status: 'disconnected',
      disconnectedReason: null,
      user: { status: 'failed', problem: { code: 'reauthorization_required' } },
    });
    expect(view.connections[1]).toMatchObject({ status: 'connected', user: { status: 'loaded' } });
  });

  it('keeps the last record of a licence whose provider is unavailable, with the problem', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.clock.now = T0 + 60_000;
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('upstream_unavailable', { 'Retry-After': '120' }),
    );

    const view = await h.send['view.refresh'](null);

    expect(view.connections[0]?.user).toEqual({
      status: 'failed',
      problem: { code: 'upstream_unavailable', retryAt: T0 + 60_000 + 120_000 },
      record: LICENSE_A.user,
    });
  });

  it('accepts a user record of any shape', async () => {
    const h = await signedIn([{ connectionId: 'odd', user: ['not', { an: 'object' }] }]);

    const view = await h.send['view.refresh'](null);

    expect(view.connections[0]?.user).toMatchObject({
      status: 'loaded',
      record: ['not', { an: 'object' }],
    });
  });

  it('when the broker is unreachable, keeps the cached list and reports it', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.unreachable = true;

    const view = await h.send['view.refresh'](null);

    expect(view.sync).toEqual({
      status: 'failed',
      problem: { code: 'broker_unreachable' },
      at: T0,
    });
    expect(view.connections.map((c) => c.user.status)).toEqual(['loaded', 'loaded']);
    expect((await h.state.read()).session?.sessionToken).toBe(TOKEN);
  });

  it('when a proxy answers 502 without the broker JSON, reports the broker as unreachable', async () => {
    const h = await signedIn();
    h.broker.fail(
      'GET',
      routes.connections,
      () => new Response('<h1>Bad gateway</h1>', { status: 502 }),
    );

    const view = await h.send['view.refresh'](null);

    expect(view.sync.problem).toEqual({ code: 'broker_unreachable' });
  });

  it('when the session is gone (invalid_session), drops the token and shows signed out', async () => {
    const h = await signedIn();
    h.broker.fail('GET', routes.connections, () => errorResponse('invalid_session'));

    const view = await h.send['view.refresh'](null);

    expect(view).toMatchObject({
      signedIn: false,
      connections: [],
      notice: { kind: 'session_ended' },
    });
    expect((await h.state.read()).session).toBeNull();
    expect((await h.state.read()).settings.locale).toBe('fr');
  });

  it("when one licence's API answers 401, even dressed as invalid_session, only its card shows it", async () => {
    const h = await signedIn();
    const forged = () =>
      jsonResponse(401, { error: 'invalid_session', message: 'from the licence API' });
    h.broker.fail('GET', routes.proxy('conn-b', 'users.me'), forged);

    const view = await h.send['view.refresh'](null);

    expect(view.signedIn).toBe(true);
    expect(view.notice).toBeNull();
    expect(view.connections.map((c) => [c.id, c.status, c.user.status])).toEqual([
      ['conn-a', 'connected', 'loaded'],
      ['conn-b', 'connected', 'failed'],
    ]);
    expect(view.connections[1]?.user).toMatchObject({
      problem: { code: 'upstream_refused', status: 401 },
    });
    expect((await h.state.read()).session).toEqual({ sessionToken: TOKEN, brokerUrl: BROKER });
    expect(h.broker.requests.some((r) => r.method === 'DELETE')).toBe(false);
  });

  it('when the host permission was revoked, asks for it instead of failing on the network', async () => {
    const h = await signedIn();
    h.granted.clear();

    const view = await h.send['view.refresh'](null);

    expect(view.sync.problem).toEqual({ code: 'permission_missing' });
    expect(h.broker.requests).toHaveLength(0);
  });

  it('drops what a refresh brings back after the user signed out meanwhile', async () => {
    const h = await signedIn();
    const held = h.broker.hold('GET', routes.connections);

    const refreshing = h.send['view.refresh'](null);
    await held.reached;
    await h.send['session.signOut'](null);
    held.release();
    await refreshing;

    expect(await h.view()).toMatchObject({ signedIn: false, connections: [] });
  });

  it('runs one refresh at a time', async () => {
    const h = await signedIn();
    const held = h.broker.hold('GET', routes.connections);

    const first = h.send['view.refresh'](null);
    await held.reached;
    const second = h.send['view.refresh'](null);
    held.release();
    await Promise.all([first, second]);

    expect(h.broker.requestsTo('GET', routes.connections)).toHaveLength(1);
  });
});

describe('connection.disconnect', () => {
  it('deletes the connection on the broker and removes its card', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);

    const view = await h.send['connection.disconnect']({ connectionId: 'conn-a' });

    expect(h.broker.requestsTo('DELETE', '/connections/conn-a')).toHaveLength(1);
    expect(view.connections.map((c) => c.id)).toEqual(['conn-b']);
    expect(view.notice).toEqual({ kind: 'disconnected', connectionId: 'conn-a' });
    expect(h.broker.connectionIds(TOKEN)).toEqual(['conn-b']);
  });

  it('treats not_found as already disconnected', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.fail('DELETE', '/connections/conn-a', () => errorResponse('not_found'));

    const view = await h.send['connection.disconnect']({ connectionId: 'conn-a' });

    expect(view.connections.map((c) => c.id)).toEqual(['conn-b']);
  });

  it('keeps the card and says why when the broker fails', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.fail('DELETE', '/connections/conn-a', () => errorResponse('server_error'));

    const view = await h.send['connection.disconnect']({ connectionId: 'conn-a' });

    expect(view.connections.map((c) => c.id)).toEqual(['conn-a', 'conn-b']);
    expect(view.notice).toEqual({ kind: 'action_failed', problem: { code: 'server_error' } });
  });
});

describe('session.signOut', () => {
  it('deletes the session on the broker and forgets the token', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);

    const view = await h.send['session.signOut'](null);

    expect(h.broker.requestsTo('DELETE', routes.session)[0]?.authorization).toBe(`Bearer ${TOKEN}`);
    expect(h.broker.sessionTokens()).toEqual([]);
    expect(view).toMatchObject({
      signedIn: false,
      connections: [],
      notice: { kind: 'signed_out' },
    });
    expect((await h.state.read()).session).toBeNull();
  });

  it('still signs out here when the broker cannot be reached, and says so', async () => {
    const h = await signedIn();
    await h.send['view.refresh'](null);
    h.broker.unreachable = true;

    const view = await h.send['session.signOut'](null);

    expect(view.notice).toEqual({
      kind: 'signed_out_locally',
      problem: { code: 'broker_unreachable' },
    });
    expect((await h.state.read()).session).toBeNull();
  });
});

describe('notice.dismiss', () => {
  it('clears the notice and a finished flow, but not a running one', async () => {
    const h = await signedIn();
    await h.send['session.signOut'](null);

    const view = await h.send['notice.dismiss'](null);

    expect(view.notice).toBeNull();
    expect(view.flow).toEqual({ status: 'idle' });
  });
});

describe('the broker client', () => {
  it("reads the broker's error mark even on an unexpected status", async () => {
    const h = await signedIn();
    h.broker.fail('GET', routes.connections, () =>
      jsonResponse(
        418,
        { error: 'rate_limited', message: 'slow down' },
        { [BROKER_ERROR_HEADER]: 'rate_limited' },
      ),
    );

    const view = await h.send['view.refresh'](null);

    expect(view.sync.problem).toEqual({ code: 'rate_limited' });
  });
});
