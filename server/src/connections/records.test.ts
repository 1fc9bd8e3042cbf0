import { describe, expect, it } from 'vitest';
import { createConnectionRepository, type ConnectionRecord } from './records.ts';
import { createSealer, DecryptError, parseKeyring } from '../base/crypto.ts';
import { indexShard, keys, licenceMember } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import { endSession } from './end-session.ts';
import { noEvents } from './events.ts';
import { createSessions } from './sessions.ts';

const A = `a:${Buffer.alloc(32, 1).toString('base64')}`;
const B = `b:${Buffer.alloc(32, 2).toString('base64')}`;
const record: ConnectionRecord = {
  id: 'c1',
  apiUrl: 'https://eu.api.example.test/licenses/1',
  status: 'connected',
  connectedAt: 1_000,
  tokens: { accessToken: 'at', refreshToken: 'rt', expiresAt: 2_000 },
};
const repository = (store: ReturnType<typeof createMemoryStore>, keyring: string) =>
  createConnectionRepository(store, createSealer(parseKeyring(keyring)));
const kid = async (store: ReturnType<typeof createMemoryStore>) =>
  (await store.getVersioned(keys.connection('sid', 'c1')))?.value.split('.')[0];

describe('connection records across an encryption key rotation', () => {
  it('reads a record sealed under the old key, and seals it again under the active one', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    expect(await kid(store)).toBe('a');

    const rotated = repository(store, `${B},${A}`);
    expect(await rotated.load('sid', 'c1')).toEqual({ record, version: 2 });
    expect(await kid(store)).toBe('b');
    // Read again: already under the active key, nothing more is written.
    expect(await rotated.load('sid', 'c1')).toEqual({ record, version: 2 });
  });

  it('refuses, and writes nothing, when the old key is gone', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    await expect(repository(store, B).load('sid', 'c1')).rejects.toBeInstanceOf(DecryptError);
    expect(await kid(store)).toBe('a');
  });
});

describe('records opened again', () => {
  const counting = (keyring: string) => {
    const sealer = createSealer(parseKeyring(keyring));
    let opens = 0;
    const open: typeof sealer.open = (blob, aad) => {
      opens++;
      return sealer.open(blob, aad);
    };
    return { sealer: { ...sealer, open }, opens: () => opens };
  };

  it('opens an unchanged sealed blob once, and hands out a record nobody can change', async () => {
    const store = createMemoryStore();
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(store, sealer);
    await repo.save('sid', record, 0);

    const first = await repo.load('sid', 'c1');
    const second = await repo.load('sid', 'c1');
    expect(opens()).toBe(1);
    expect(second).toEqual({ record, version: 1 });
    // The identity rule: the caches keyed by record object (loader, proxy) depend on it.
    expect(second!.record).toBe(first!.record);
    expect(Object.isFrozen(first!.record) && Object.isFrozen(first!.record.tokens)).toBe(true);
  });

  it('opens the new blob once the record was written again', async () => {
    const store = createMemoryStore();
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(store, sealer);
    await repo.save('sid', record, 0);
    await repo.load('sid', 'c1');

    const rotated = {
      ...record,
      tokens: { accessToken: 'at2', refreshToken: 'rt2', expiresAt: 3_000 },
    };
    const before = (await repo.load('sid', 'c1'))!.record;
    await repository(store, A).save('sid', rotated, 1);
    const after = await repo.load('sid', 'c1');
    expect(after).toEqual({ record: rotated, version: 2 });
    expect(after!.record).not.toBe(before);
    expect(opens()).toBe(2);
  });

  it('opens an answer read afresh every time, and keeps nothing for it', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    // A store that keeps no answer (Redis with REDIS_CACHE_ENTRIES=0, or an untracked read).
    const fresh: typeof store = {
      ...store,
      getVersioned: async (key, options) => {
        const stored = await store.getVersioned(key, options);
        return stored && { ...stored };
      },
    };
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(fresh, sealer);
    const first = await repo.load('sid', 'c1');
    const second = await repo.load('sid', 'c1');
    expect(opens()).toBe(2);
    expect(second).toEqual(first);
    expect(second!.record).not.toBe(first!.record);
  });
});

describe('the licence index', () => {
  const DAY = 24 * 3600 * 1000;
  const LICENCE = 'https://eu.api.example.test/licenses/1';
  const OTHER = 'https://eu.api.example.test/licenses/2';

  /** Sessions and records wired as compose.ts wires them, on a clock the test moves. */
  async function world() {
    let now = Date.UTC(2026, 0, 1);
    const clock = () => now;
    const store = createMemoryStore(clock);
    const sealer = createSealer(parseKeyring(A));
    const sessions = createSessions(store, clock, { idleMs: 30 * DAY }, noEvents, {
      renew: (sid, ttlMs) => connections.renew(sid, ttlMs),
    });
    const connections = createConnectionRepository(store, sealer, { sessions });
    const { token, sid } = await sessions.create();
    const of = (id: string, apiUrl: string): ConnectionRecord => ({ ...record, id, apiUrl });
    /** The index's entry for `sid`'s hold of `apiUrl`: when it expires, or null when absent. */
    const entry = async (apiUrl: string, holder = sid): Promise<number | null> => {
      const members = await store.sortedRange(keys.licenceIndex(indexShard(holder)), 1000);
      return members.find(({ member }) => member === licenceMember(apiUrl, holder))?.score ?? null;
    };
    return {
      store,
      sessions,
      connections,
      token,
      sid,
      of,
      entry,
      now: clock,
      advance: (ms: number) => (now += ms),
    };
  }

  it('finds the connections of a licence once connected, in this session and others, and no other licence', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    await w.connections.save(w.sid, w.of('c2', OTHER), 0);
    const other = await w.sessions.create();
    await w.connections.save(other.sid, w.of('c3', LICENCE), 0);

    const held = await w.connections.ofLicence(LICENCE);
    // Every connection of the sessions that hold it: the caller keeps those of that api_url.
    expect(held.map(({ sid, id }) => `${sid === w.sid ? 'mine' : 'other'} ${id}`).sort()).toEqual([
      'mine c1',
      'mine c2',
      'other c3',
    ]);
    expect(await w.connections.ofLicence('https://eu.api.example.test/licenses/3')).toEqual([]);
    expect(await w.entry(LICENCE)).toBe(w.now() + 30 * DAY);
    // The member names the licence and the whole session id, within a compact sorted set's 64.
    expect(licenceMember(LICENCE, w.sid)).toHaveLength(55);
  });

  it('keeps it through a reconnection and a disconnection, each write renewing it with the record', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    w.advance(DAY);
    await w.sessions.resolve(w.token);
    await w.connections.save(w.sid, w.of('c1', LICENCE), 1);
    expect(await w.entry(LICENCE)).toBe(w.now() + 30 * DAY);
    w.advance(DAY);
    await w.sessions.resolve(w.token);
    const disconnected = { ...w.of('c1', LICENCE), status: 'disconnected' as const };
    await w.connections.save(w.sid, disconnected, 2);
    expect(await w.entry(LICENCE)).toBe(w.now() + 30 * DAY);
    expect(await w.connections.ofLicence(LICENCE)).toEqual([{ sid: w.sid, id: 'c1' }]);
  });

  it('lives as long as the record: a renewal of the session renews it, with nothing written', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    // Used every 25 days, never written again: without the renewal it would lapse at day 30.
    for (let day = 25; day <= 100; day += 25) {
      w.advance(25 * DAY);
      expect(await w.sessions.resolve(w.token)).toBe(w.sid);
      expect(await w.entry(LICENCE)).toBe(w.now() + 30 * DAY);
    }
    expect(await w.connections.ofLicence(LICENCE)).toEqual([{ sid: w.sid, id: 'c1' }]);
    // Unused, it ends with its session and record.
    w.advance(30 * DAY);
    expect(await w.store.indexMembers(keys.licenceIndex(indexShard(w.sid)))).toEqual([]);
  });

  it('puts back at renewal the entry of a connection an older release wrote without one', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    await w.store.indexRemove(keys.licenceIndex(indexShard(w.sid)), licenceMember(LICENCE, w.sid));
    w.advance(2 * 3600 * 1000);
    await w.sessions.resolve(w.token);
    expect(await w.entry(LICENCE)).toBe(w.now() + 30 * DAY);
  });

  it('drops it when the connection is removed, and leaves the session’s other licences', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    await w.connections.save(w.sid, w.of('c2', OTHER), 0);
    await w.connections.remove(w.sid, 'c1');
    expect(await w.entry(LICENCE)).toBeNull();
    expect(await w.connections.ofLicence(LICENCE)).toEqual([]);
    expect(await w.connections.ofLicence(OTHER)).toEqual([{ sid: w.sid, id: 'c2' }]);
  });

  it('drops every licence of a session ended (a sign-out, an operator revoking it)', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    await w.connections.save(w.sid, w.of('c2', OTHER), 0);
    const other = await w.sessions.create();
    await w.connections.save(other.sid, w.of('c3', LICENCE), 0);
    expect(await endSession(w, w.sid, 'signed_out')).toEqual(['c1', 'c2']);
    expect([await w.entry(LICENCE), await w.entry(OTHER)]).toEqual([null, null]);
    expect(await w.connections.ofLicence(LICENCE)).toEqual([{ sid: other.sid, id: 'c3' }]);
  });

  it('leaves nothing of a session a sign-out ended while a late write of its record was under way', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    const loaded = (await w.connections.load(w.sid, 'c1'))!;
    // The sign-out lands between the write's session check and its id's add (a refresh stored late).
    const setAdd = w.store.setAdd.bind(w.store);
    w.store.setAdd = async (...args) => {
      await endSession(w, w.sid, 'signed_out');
      await setAdd(...args);
    };
    expect(await w.connections.save(w.sid, loaded.record, loaded.version)).toBe(false);
    const left: string[] = [];
    for await (const key of w.store.scan('*')) left.push(key);
    expect(left.filter((key) => key.includes(w.sid))).toEqual([]);
  });

  it('leaves nothing of a session a sign-out ended while its first connection was being written', async () => {
    const w = await world();
    // The sign-out lands between the write's session check and its id's add (a slow callback).
    const setAdd = w.store.setAdd.bind(w.store);
    w.store.setAdd = async (...args) => {
      await endSession(w, w.sid, 'signed_out');
      await setAdd(...args);
    };
    await expect(w.connections.save(w.sid, w.of('c1', LICENCE), 0)).rejects.toMatchObject({
      code: 'invalid_session',
    });
    const left: string[] = [];
    for await (const key of w.store.scan('*')) left.push(key);
    expect(left.filter((key) => key.includes(w.sid))).toEqual([]);
    expect(await w.entry(LICENCE)).toBeNull();
  });

  it('is put by a record sealed under a retired key only once it can be opened: a removal leaves it to expire', async () => {
    const w = await world();
    await w.connections.save(w.sid, w.of('c1', LICENCE), 0);
    const retired = createConnectionRepository(w.store, createSealer(parseKeyring(B)));
    await retired.remove(w.sid, 'c1');
    // Its licence cannot be read: the entry stays, names a session without that connection, and
    // expires with the session.
    expect(await w.entry(LICENCE)).not.toBeNull();
    expect(await w.connections.ofLicence(LICENCE)).toEqual([]);
  });
});
