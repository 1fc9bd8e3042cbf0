import { describe, expect, it } from 'vitest';
import { createConnectionRepository, type ConnectionRecord } from './records.ts';
import { createSealer, parseKeyring } from '../base/crypto.ts';
import { keys } from '../store/keys.ts';
import { createSessions, type SessionLifetime } from './sessions.ts';
import { createMemoryStore } from '../store/memory.ts';
import type { Store } from '../store/types.ts';

const DAY = 24 * 3600 * 1000;
const KEYRING = `k:${Buffer.alloc(32, 3).toString('base64')}`;

/** Sessions and connection records on the embedded store, whose expiry follows this clock. */
function world(lifetime: SessionLifetime = { idleMs: 30 * DAY }) {
  let now = Date.UTC(2026, 0, 1);
  const clock = () => now;
  const store = createMemoryStore(clock);
  const sessions = createSessions(store, clock, lifetime);
  const connections = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)), {
    sessions,
  });
  const record = (id: string): ConnectionRecord => ({
    id,
    apiUrl: 'https://api.example/licenses/1',
    status: 'connected',
    connectedAt: now,
    tokens: { accessToken: 'a', refreshToken: 'r', expiresAt: now + 3600_000 },
  });
  return {
    store,
    sessions,
    connections,
    record,
    advance: (ms: number) => (now += ms),
  };
}

/** Every key the store still holds under a session. */
async function under(store: Store, sid: string, id: string): Promise<string[]> {
  const found: string[] = [];
  if ((await store.get(keys.session(sid))) !== null) found.push('session');
  if ((await store.setMembers(keys.connectionIds(sid))).length > 0) found.push('connections');
  if ((await store.getVersioned(keys.connection(sid, id))) !== null) found.push('connection');
  return found;
}

describe('session lifetime', () => {
  it('a session used daily for 90 days stays signed in, with its connection', async () => {
    const w = world();
    const { token, sid } = await w.sessions.create();
    await w.connections.save(sid, w.record('c1'), 0);
    for (let day = 1; day <= 90; day++) {
      w.advance(DAY);
      expect(await w.sessions.resolve(token)).toBe(sid);
    }
    expect(await under(w.store, sid, 'c1')).toEqual(['session', 'connections', 'connection']);
  });

  it('a session idle past the timeout is gone, with everything under it', async () => {
    const w = world();
    const { token, sid } = await w.sessions.create();
    await w.connections.save(sid, w.record('c1'), 0);
    w.advance(10 * DAY);
    expect(await w.sessions.resolve(token)).toBe(sid);
    w.advance(30 * DAY);
    expect(await w.sessions.resolve(token)).toBeNull();
    expect(await under(w.store, sid, 'c1')).toEqual([]);
  });

  it('renews at most once an hour, however often it is used', async () => {
    const w = world();
    const { token } = await w.sessions.create();
    let writes = 0;
    const set = w.store.set.bind(w.store);
    w.store.set = async (...args) => {
      writes++;
      return set(...args);
    };
    for (let call = 0; call < 120; call++) {
      w.advance(60_000);
      await w.sessions.resolve(token);
    }
    expect(writes).toBe(2);
  });

  it('ends at SESSION_MAX_AGE however much it is used, records included', async () => {
    const w = world({ idleMs: 30 * DAY, maxAgeMs: 7 * DAY });
    const { token, sid } = await w.sessions.create();
    await w.connections.save(sid, w.record('c1'), 0);
    for (let day = 1; day < 7; day++) {
      w.advance(DAY);
      expect(await w.sessions.resolve(token)).toBe(sid);
    }
    w.advance(DAY);
    expect(await w.sessions.resolve(token)).toBeNull();
    expect(await under(w.store, sid, 'c1')).toEqual([]);
  });

  it('a record written late in a session does not outlive it', async () => {
    const w = world();
    const { sid } = await w.sessions.create();
    w.advance(29 * DAY);
    await w.connections.save(sid, w.record('c1'), 0);
    w.advance(DAY);
    expect(await under(w.store, sid, 'c1')).toEqual([]);
  });

  it('writes no record under a session that is gone', async () => {
    const w = world();
    const { sid } = await w.sessions.create();
    await w.sessions.destroy(sid);
    await expect(w.connections.save(sid, w.record('c1'), 0)).rejects.toMatchObject({
      code: 'invalid_session',
    });
    expect(await under(w.store, sid, 'c1')).toEqual([]);
  });
});

describe('a session as stored', () => {
  it('is compact, and one stored as named fields (format 1) is read as before', async () => {
    const w = world({ idleMs: 30 * DAY, maxAgeMs: 60 * DAY });
    const { token, sid } = await w.sessions.create();
    const stored = (await w.store.get(keys.session(sid)))!;
    expect(JSON.parse(stored)).toEqual([Date.UTC(2026, 0, 1), 0, Date.UTC(2026, 0, 31)]);

    const created = Date.UTC(2025, 11, 1);
    await w.store.set(
      keys.session(sid),
      JSON.stringify({ created_at: created, expires_at: Date.UTC(2026, 0, 31) }),
      30 * DAY,
    );
    expect(await w.sessions.resolve(token)).toBe(sid);
    // The max age still counts from the recorded creation: 60 days after it, however used.
    expect(await w.sessions.remainingMs(sid)).toBeLessThanOrEqual(
      created + 60 * DAY - Date.UTC(2026, 0, 1),
    );
  });
});
