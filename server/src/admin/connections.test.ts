import { describe, expect, it } from 'vitest';
import { keys } from '../store/keys.ts';
import { sessionRef } from '../ops/events.ts';
import { parseKeyring } from '../base/crypto.ts';
import { adminWorld, key, OPERATOR, START } from './test-kit.ts';

const LICENCE = 'https://api.example/licenses/1001';
const OTHER = 'https://api.example/licenses/2002';

describe('findConnections', () => {
  it('by licence: every connection to exactly that api_url, as an operator sees it', async () => {
    const world = adminWorld();
    const first = await world.session([LICENCE, OTHER], ['c-a', 'c-b']);
    world.advance(5000);
    await world.session([`${LICENCE}/more`]);
    const found = await world.admin.findConnections({ licence: LICENCE }, 100);
    expect(found).toEqual([
      {
        id: 'c-a',
        sessionRef: sessionRef(first),
        licence: LICENCE,
        status: 'connected',
        createdAt: new Date(START).toISOString(),
        lastRefreshAt: null,
        lastRefreshOutcome: null,
        disconnectedReason: null,
        lastUsedAt: new Date(START).toISOString(),
        keyId: 'k1',
      },
    ]);
    // No answer names the session id or a token.
    expect(JSON.stringify(found)).not.toContain(first);
    expect(JSON.stringify(found)).not.toMatch(/"r0"|"a0"/);
  });

  it('by session reference and by connection id', async () => {
    const world = adminWorld();
    const sid = await world.session([LICENCE, OTHER], ['c-a', 'c-b']);
    await world.session([LICENCE], ['c-z']);
    const bySession = await world.admin.findConnections({ sessionRef: sessionRef(sid) }, 100);
    expect(bySession.map(({ id }) => id).sort()).toEqual(['c-a', 'c-b']);
    const byId = await world.admin.findConnections({ connectionId: 'c-z' }, 100);
    expect(byId.map(({ id, licence }) => [id, licence])).toEqual([['c-z', LICENCE]]);
    expect(await world.admin.findConnections({ connectionId: 'nope' }, 100)).toEqual([]);
  });

  it('keeps to the limit', async () => {
    const world = adminWorld();
    for (let n = 0; n < 3; n++) await world.session([LICENCE]);
    expect(await world.admin.findConnections({ licence: LICENCE }, 2)).toHaveLength(2);
  });

  it('says when the last refresh stored a pair, or why it did not', async () => {
    const world = adminWorld();
    const sid = await world.session([LICENCE, OTHER], ['c-a', 'c-b']);
    const loaded = (await world.connections.load(sid, 'c-a'))!;
    await world.connections.save(
      sid,
      { ...loaded.record, refreshedAt: START + 1000 },
      loaded.version,
    );
    await world.store.set(
      keys.backoff(sid, 'c-b'),
      JSON.stringify({ until: START + 60_000, attempts: 1 }),
      120_000,
    );
    const views = await world.admin.findConnections({ sessionRef: sessionRef(sid) }, 10);
    const of = (id: string) => views.find((view) => view.id === id);
    expect(of('c-a')).toMatchObject({
      lastRefreshAt: new Date(START + 1000).toISOString(),
      lastRefreshOutcome: 'ok',
    });
    expect(of('c-b')).toMatchObject({ lastRefreshOutcome: 'transient' });
  });

  it('leaves out a record sealed under a key no longer configured', async () => {
    const world = adminWorld();
    await world.session([LICENCE]);
    const { admin } = world.withKeys(parseKeyring(key('k2', 2)));
    expect(await admin.findConnections({ licence: LICENCE }, 10)).toEqual([]);
    expect(await admin.findConnections({ connectionId: 'c0' }, 10)).toEqual([]);
  });

  it('refuses a malformed query with a clear message', async () => {
    const { admin } = adminWorld();
    await expect(admin.findConnections({ connectionId: 'a*b' }, 10)).rejects.toThrow(
      /connection id/,
    );
    await expect(admin.findConnections({ sessionRef: 'ses_short' }, 10)).rejects.toThrow(
      /session reference/,
    );
    await expect(admin.findConnections({ licence: 'not a url' }, 10)).rejects.toThrow(/api_url/);
  });
});

describe('disconnect', () => {
  it('marks it disconnected by an operator, drops its tokens, reports it and the action', async () => {
    const world = adminWorld();
    const sid = await world.session([LICENCE, OTHER], ['c-a', 'c-b']);
    expect(await world.admin.disconnect('c-a', OPERATOR)).toEqual({ ok: true, count: 1 });
    const { record } = (await world.connections.load(sid, 'c-a'))!;
    expect(record).toMatchObject({
      status: 'disconnected',
      disconnectedReason: 'disconnected_by_operator',
    });
    expect(record.tokens).toBeUndefined();
    expect((await world.connections.load(sid, 'c-b'))!.record.status).toBe('connected');
    const [disconnected] = await world.outbox(sid);
    expect(disconnected?.payload).toMatchObject({
      type: 'connection.disconnected',
      data: { connection: { id: 'c-a', reason: 'disconnected_by_operator' } },
    });
    const [action] = await world.adminOutbox();
    expect(action?.payload).toEqual({
      type: 'admin.action',
      timestamp: new Date(START).toISOString(),
      data: {
        actor: { name: 'alice', role: 'operator' },
        action: 'disconnect',
        target: { connection: 'c-a' },
      },
    });
    expect(await world.connections.countByStatus()).toEqual({ connected: 1, disconnected: 1 });
  });

  it('answers not_found for a connection that is not there', async () => {
    const world = adminWorld();
    expect(await world.admin.disconnect('c-gone', OPERATOR)).toEqual({
      ok: false,
      count: 0,
      error: 'not_found',
    });
    expect(await world.adminOutbox()).toEqual([]);
  });
});

describe('ending sessions', () => {
  it('ends a session by its reference, as revoked', async () => {
    const world = adminWorld();
    const sid = await world.session([LICENCE]);
    expect(await world.admin.endSession(sessionRef(sid), OPERATOR)).toEqual({ ok: true, count: 1 });
    expect(await world.sessions.exists(sid)).toBe(false);
    const ended = (await world.outbox(sid)).at(-1);
    expect(ended?.payload).toMatchObject({
      type: 'session.ended',
      data: { session: { reason: 'revoked' }, connections: ['c0'] },
    });
    expect((await world.adminOutbox())[0]?.payload).toMatchObject({
      data: { action: 'end_session', target: { session: sessionRef(sid) } },
    });
    expect(await world.admin.endSession(sessionRef(sid), OPERATOR)).toMatchObject({
      ok: false,
      error: 'not_found',
    });
  });

  it("ends a session named by its id (the CLI's drop-session <sid>)", async () => {
    const world = adminWorld();
    const sid = await world.session([LICENCE]);
    expect(await world.admin.endSessionOf(sid, OPERATOR)).toEqual({ ok: true, count: 1 });
    expect(await world.sessions.exists(sid)).toBe(false);
    expect(await world.admin.endSessionOf(sid, OPERATOR)).toMatchObject({ error: 'not_found' });
  });

  it('ends every session holding a licence, each once, and no other', async () => {
    const world = adminWorld();
    const both = await world.session([LICENCE, OTHER]);
    const one = await world.session([LICENCE]);
    const other = await world.session([OTHER]);
    expect(await world.admin.endSessionsOfLicence(LICENCE, OPERATOR)).toEqual({
      ok: true,
      count: 2,
    });
    expect(await world.sessions.exists(both)).toBe(false);
    expect(await world.sessions.exists(one)).toBe(false);
    expect(await world.sessions.exists(other)).toBe(true);
    expect(await world.admin.endSessionsOfLicence(LICENCE, OPERATOR)).toMatchObject({
      error: 'not_found',
    });
  });
});
