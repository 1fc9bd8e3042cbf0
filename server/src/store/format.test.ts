import { describe, expect, it } from 'vitest';
import {
  DATA_FORMAT,
  DataFormatError,
  retryUpgrade,
  upgradeFormat,
  type SetAside,
  type UpgradeOptions,
} from './format.ts';
import { format1Keys } from './format1/keys.ts';
import {
  eventShard,
  indexMember,
  indexShard,
  keys,
  LICENCE_SHARDS,
  licenceMember,
} from './keys.ts';
import type { ApiUrlOf } from './licences.ts';
import { createMemoryStore } from './memory.ts';
import type { Store } from './types.ts';

const T0 = Date.UTC(2026, 10, 1, 9, 0);
const SID = 'Qm9uam91ciBsZXMgYW1pcywgYm9uam91ciB0b3VzIQ0';
const DAY = 24 * 3600 * 1000;
/** How long the upgrade's lease lasts (format.ts): an instance that died holds it this long. */
const LEASE_MS = 60_000;

/**
 * The records here are stored unsealed, as JSON `{ apiUrl }`: the store never opens a record
 * itself, it is given a way to (the connection repository's, in compose.ts). One that does not
 * hold an api_url stands for a record sealed under a key no longer configured.
 */
const apiUrlOf: ApiUrlOf = ({ stored }) => {
  const { apiUrl } = JSON.parse(stored.value) as { apiUrl?: unknown };
  if (typeof apiUrl !== 'string') throw new Error('no key for a record sealed under "old"');
  return apiUrl;
};
const opens: UpgradeOptions = { apiUrlOf };
const licenceOf = (i: number) => `https://api.example.test/licences/${i % 3}`;

/** A session alive for `ttlMs` with connection `id` to `apiUrl`, as formats 1 and 2 keep them. */
async function connection(store: Store, sid: string, id: string, apiUrl: string, ttlMs = DAY) {
  await store.set(keys.session(sid), '[0,0,0]', ttlMs);
  await store.setAdd(keys.connectionIds(sid), id, ttlMs);
  await store.setVersioned(keys.connection(sid, id), 0, JSON.stringify({ apiUrl }), ttlMs);
}

/** A store as release 0.1 left it: one index, one schedule, one list of dead letters. */
async function formatOne() {
  const now = () => T0;
  const store = createMemoryStore(now);
  await store.indexPut(format1Keys.connectionIndex('connected'), `${SID}:c1`, DAY);
  await store.indexPut(format1Keys.connectionIndex('disconnected'), `${SID}:c2`, DAY);
  await store.schedulePut(format1Keys.eventsDue, SID, T0 + 5000);
  const letter = JSON.stringify({
    id: 'msg_1',
    session_ref: 'ses_abc',
    dead_at: '2026-11-01T08:00:00Z',
  });
  await store.listPush(format1Keys.deadLetters, letter, 30 * DAY);
  return { store, now, letter };
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Session `i`'s id: spread over the shards, and unique in the 16 characters an index keeps. */
const sidOf = (i: number) =>
  `${BASE64URL[(i * 7) % 64]}${BASE64URL[(i * 13) % 64]}${String(i).padStart(14, '0')}${'x'.repeat(27)}`;

/**
 * Release 0.1's keys for `sessions` sessions, on a clock the test moves: each with a connected
 * connection, every other one a disconnected one too, each due for delivery, every third with a
 * dead letter.
 */
async function manySessions(sessions: number) {
  const clock = { at: T0 };
  const now = () => clock.at;
  const store = createMemoryStore(now);
  const expected = {
    indexed: [] as string[],
    scheduled: [] as string[],
    deadLetters: [] as string[],
    licences: [] as string[],
  };
  for (let i = 0; i < sessions; i++) {
    const sid = sidOf(i);
    await connection(store, sid, `c${i}`, licenceOf(i));
    expected.licences.push(`${indexShard(sid)} ${licenceMember(licenceOf(i), sid)} ${T0 + DAY}`);
    await store.indexPut(format1Keys.connectionIndex('connected'), `${sid}:c${i}`, DAY);
    expected.indexed.push(`connected ${indexMember(sid, `c${i}`)} ${T0 + DAY}`);
    if (i % 2 === 0) {
      await store.indexPut(format1Keys.connectionIndex('disconnected'), `${sid}:d${i}`, DAY);
      expected.indexed.push(`disconnected ${indexMember(sid, `d${i}`)} ${T0 + DAY}`);
    }
    await store.schedulePut(format1Keys.eventsDue, sid, T0 + i);
    expected.scheduled.push(`${sid} ${T0 + i}`);
    if (i % 3 === 0) {
      const letter = JSON.stringify({ id: `msg_${i}`, session_ref: `ses_${sid}`, dead_at: '' });
      await store.listPush(format1Keys.deadLetters, letter, 30 * DAY);
      expected.deadLetters.push(letter);
    }
  }
  for (const list of Object.values(expected)) list.sort();
  return {
    store,
    now,
    clock,
    sids: Array.from({ length: sessions }, (_, i) => sidOf(i)),
    expected,
  };
}

/** What the shards of `sids` hold, in the shape of manySessions' `expected`, and what is left of format 1. */
async function holdings(store: Store, sids: readonly string[]) {
  const indexed: string[] = [];
  for (const status of ['connected', 'disconnected'] as const)
    for (const shard of new Set(sids.map(indexShard)))
      for (const { member, score } of await store.sortedRange(
        keys.connectionIndex(status, shard),
        1000,
      ))
        indexed.push(`${status} ${member} ${score}`);
  const scheduled: string[] = [];
  const deadLetters: string[] = [];
  for (const shard of new Set(sids.map(eventShard))) {
    for (const { member, score } of await store.sortedRange(keys.eventsDue(shard), 1000))
      scheduled.push(`${member} ${score}`);
    deadLetters.push(...(await store.logNewest(keys.deadLetters(shard), 1000)));
  }
  return {
    moved: {
      indexed: indexed.sort(),
      scheduled: scheduled.sort(),
      deadLetters: deadLetters.sort(),
      licences: await licencesIndexed(store),
    },
    left:
      (await store.indexCount(format1Keys.connectionIndex('connected'))) +
      (await store.indexCount(format1Keys.connectionIndex('disconnected'))) +
      (await store.scheduleSize(format1Keys.eventsDue)) +
      (await store.listLength(format1Keys.deadLetters)),
  };
}

/** Every member of the licence index, as `<shard> <member> <score>`, sorted. */
async function licencesIndexed(store: Store): Promise<string[]> {
  const held: string[] = [];
  for (let shard = 0; shard < LICENCE_SHARDS; shard++)
    for (const { member, score } of await store.sortedRange(keys.licenceIndex(shard), 1000))
      held.push(`${shard} ${member} ${score}`);
  return held.sort();
}

const READS = new Set([
  'get',
  'getWithTtl',
  'scan',
  'indexMembers',
  'getVersioned',
  'listHead',
  'listRange',
  'listLength',
  'scheduleDue',
  'scheduleSize',
  'sortedRange',
  'logNewest',
  'logSize',
  'setMembers',
  'indexCount',
  'ping',
]);

/**
 * `store` as an instance sees it that stops dead after `writes` writes: every call from then on
 * fails, as if the process were gone (what it wrote stays; its lease runs out on its own).
 */
function stoppingAfter(store: Store, writes: number): { store: Store; stopped: () => boolean } {
  let left = writes;
  let stopped = false;
  const wrapped = Object.fromEntries(
    Object.entries(store).map(([name, method]: [string, (...args: unknown[]) => unknown]) => [
      name,
      (...args: unknown[]) => {
        if (!READS.has(name) && left-- <= 0) stopped = true;
        return stopped ? Promise.reject(new Error('the instance stopped')) : method(...args);
      },
    ]),
  );
  return { store: wrapped as unknown as Store, stopped: () => stopped };
}

describe('upgradeFormat', () => {
  it('moves format 1 into the shards of format 2, and says the store is format 3', async () => {
    const { store, now, letter } = await formatOne();
    const upgrade = await upgradeFormat(store, now, opens);
    expect(upgrade).toMatchObject({
      from: 1,
      to: DATA_FORMAT,
      moved: { indexed: 2, scheduled: 1, deadLetters: 1, licences: 0 },
      setAside: 0,
      unreadable: 0,
      leftToAnother: false,
    });
    expect(await store.get(keys.dataFormat)).toBe(String(DATA_FORMAT));
    const shard = indexShard(SID);
    expect(await store.indexCount(keys.connectionIndex('connected', shard))).toBe(1);
    expect(await store.indexCount(keys.connectionIndex('disconnected', shard))).toBe(1);
    expect(await store.sortedRange(keys.connectionIndex('connected', shard), 9)).toEqual([
      { member: indexMember(SID, 'c1'), score: T0 + DAY },
    ]);
    expect(await store.scheduleDue(keys.eventsDue(eventShard(SID)), T0 + 5000, 9)).toEqual([SID]);
    expect(await store.logNewest(keys.deadLetters(eventShard('abc')), 9)).toEqual([letter]);
    // Nothing of format 1 is left, and the lease is let go.
    expect(await store.indexCount(format1Keys.connectionIndex('connected'))).toBe(0);
    expect(await store.scheduleSize(format1Keys.eventsDue)).toBe(0);
    expect(await store.listLength(format1Keys.deadLetters)).toBe(0);
    expect(await store.get(keys.dataFormatUpgrade)).toBeNull();
  });

  it('does nothing more on a store already of format 3', async () => {
    const { store, now } = await formatOne();
    await upgradeFormat(store, now, opens);
    expect(await upgradeFormat(store, now, opens)).toMatchObject({
      from: DATA_FORMAT,
      to: DATA_FORMAT,
      moved: { indexed: 0, scheduled: 0, deadLetters: 0 },
    });
  });

  it('leaves the upgrade to the instance already doing it', async () => {
    const { store, now } = await formatOne();
    await store.set(keys.dataFormatUpgrade, 'another instance', 60_000);
    expect(await upgradeFormat(store, now, opens)).toMatchObject({
      from: 1,
      to: 1,
      leftToAnother: true,
    });
    expect(await store.get(keys.dataFormat)).toBeNull();
  });

  it('refuses a store of a later format: an older broker must not write over newer data', async () => {
    const { store, now } = await formatOne();
    await store.set(keys.dataFormat, String(DATA_FORMAT + 1), 60_000);
    await expect(upgradeFormat(store, now, opens)).rejects.toThrow(DataFormatError);
    await expect(upgradeFormat(store, now, opens)).rejects.toThrow(/format 4.*writes format 3/);
  });

  describe('when the instance stops midway', () => {
    it('loses nothing, wherever it stops: the next instance moves the rest once its lease runs out', async () => {
      const { expected, sids } = await manySessions(5);
      let stops = 0;
      for (let writes = 0; ; writes++) {
        const { store, now, clock } = await manySessions(5);
        const stopping = stoppingAfter(store, writes);
        const first = await upgradeFormat(stopping.store, now, { ...opens, batch: 2 }).catch(
          () => null,
        );
        if (!stopping.stopped()) {
          // It never stopped: every point before this one was tried.
          expect(first).toMatchObject({ to: DATA_FORMAT });
          break;
        }
        stops++;
        clock.at += LEASE_MS;
        const next = await upgradeFormat(store, now, { ...opens, batch: 2 });
        expect(next, `stopped after ${writes} writes`).toMatchObject({ to: DATA_FORMAT });
        expect(await holdings(store, sids), `stopped after ${writes} writes`).toEqual({
          moved: expected,
          left: 0,
        });
      }
      expect(stops).toBeGreaterThan(30);
    });

    it('stops between batches when asked, lets go of its lease, and another instance finishes', async () => {
      const { store, now, expected, sids } = await manySessions(5);
      const stop = new AbortController();
      const batches: string[] = [];
      const upgrading = upgradeFormat(store, now, {
        ...opens,
        batch: 2,
        signal: stop.signal,
        onBatch: ({ moving, moved }) => {
          batches.push(`${moving} ${moved}`);
          stop.abort(new Error('SIGTERM'));
        },
      });
      await expect(upgrading).rejects.toThrow('SIGTERM');
      expect(batches).toEqual(['indexed 2']);
      expect(await store.get(keys.dataFormatUpgrade)).toBeNull();
      expect(await store.get(keys.dataFormat)).toBeNull();
      expect((await holdings(store, sids)).moved.indexed).toHaveLength(2);

      expect(await upgradeFormat(store, now, { ...opens, batch: 2 })).toMatchObject({
        to: DATA_FORMAT,
        moved: { indexed: expected.indexed.length - 2 },
      });
      expect(await holdings(store, sids)).toEqual({ moved: expected, left: 0 });
    });

    it('stops moving once its lease is lost, and leaves the format to whoever holds it', async () => {
      const { store, now } = await manySessions(5);
      const upgrade = await upgradeFormat(store, now, {
        ...opens,
        batch: 2,
        // It stalled past its lease, and another instance took it.
        onBatch: () => void store.set(keys.dataFormatUpgrade, 'another instance', LEASE_MS),
      });
      expect(upgrade).toMatchObject({ from: 1, to: 1, moved: { indexed: 2 }, leftToAnother: true });
      expect(await store.get(keys.dataFormat)).toBeNull();
      expect(await store.get(keys.dataFormatUpgrade)).toBe('another instance');
      expect(await store.indexCount(format1Keys.connectionIndex('connected'))).toBe(3);
    });
  });

  describe('when format 1 holds an entry that cannot be read', () => {
    it('sets a dead letter that is not JSON aside, says why, and moves the others', async () => {
      const { store, now, letter } = await formatOne();
      await store.listPush(format1Keys.deadLetters, '{"id":"msg_2",', 30 * DAY);
      await store.listPush(format1Keys.deadLetters, 'null', 30 * DAY);
      const setAside: SetAside[] = [];
      const upgrade = await upgradeFormat(store, now, {
        ...opens,
        onSetAside: (each) => setAside.push(each),
      });
      expect(upgrade).toMatchObject({
        to: DATA_FORMAT,
        moved: { indexed: 2, scheduled: 1, deadLetters: 1 },
        setAside: 2,
      });
      expect(setAside).toEqual([
        { key: format1Keys.deadLetters, entry: '{"id":"msg_2",', reason: 'not a JSON object' },
        { key: format1Keys.deadLetters, entry: 'null', reason: 'not a JSON object' },
      ]);
      expect(await store.logNewest(keys.deadLetters(eventShard('abc')), 9)).toEqual([letter]);
      expect(await store.listLength(format1Keys.deadLetters)).toBe(0);
    });

    it('sets an index member that is not `sid:id` aside, and moves the others', async () => {
      const { store, now } = await formatOne();
      const index = format1Keys.connectionIndex('connected');
      for (const member of ['no-colon', ':c3', `${SID}:`]) await store.indexPut(index, member, DAY);
      const setAside: SetAside[] = [];
      const upgrade = await upgradeFormat(store, now, {
        ...opens,
        onSetAside: (each) => setAside.push(each),
      });
      expect(upgrade).toMatchObject({ to: DATA_FORMAT, moved: { indexed: 2 }, setAside: 3 });
      expect(setAside.map(({ entry, reason }) => `${entry}: ${reason}`).sort()).toEqual([
        ':c3: not sid:id',
        `${SID}:: not sid:id`,
        'no-colon: not sid:id',
      ]);
      expect(await store.indexCount(index)).toBe(0);
    });
  });
});

/** A store as release 1.0 (format 2) left it: `sessions` sessions, a connection each. */
async function formatTwo(sessions: number) {
  const clock = { at: T0 };
  const now = () => clock.at;
  const store = createMemoryStore(now);
  await store.set(keys.dataFormat, '2', DAY);
  const licences: string[] = [];
  for (let i = 0; i < sessions; i++) {
    await connection(store, sidOf(i), `c${i}`, licenceOf(i));
    licences.push(`${indexShard(sidOf(i))} ${licenceMember(licenceOf(i), sidOf(i))} ${T0 + DAY}`);
  }
  return { store, now, clock, licences: licences.sort() };
}

describe('upgradeFormat to format 3: the licence index', () => {
  it('indexes the licence of every connection of a store of format 2, each to live as long as its session', async () => {
    const { store, now, licences } = await formatTwo(7);
    const batches: string[] = [];
    const upgrade = await upgradeFormat(store, now, {
      ...opens,
      batch: 3,
      onBatch: ({ moving, moved }) => batches.push(`${moving} ${moved}`),
    });
    expect(upgrade).toMatchObject({
      from: 2,
      to: 3,
      moved: { indexed: 0, scheduled: 0, deadLetters: 0, licences: 7 },
      unreadable: 0,
      leftToAnother: false,
    });
    expect(batches).toEqual(['licences 3', 'licences 6', 'licences 7']);
    expect(await licencesIndexed(store)).toEqual(licences);
    expect(await store.get(keys.dataFormat)).toBe('3');
    expect(await store.get(keys.dataFormatUpgrade)).toBeNull();
  });

  it('indexes the connections of format 1 too, with its moves', async () => {
    const { store, now, expected, sids } = await manySessions(4);
    const upgrade = await upgradeFormat(store, now, opens);
    expect(upgrade).toMatchObject({ from: 1, to: 3, moved: { licences: 4 } });
    expect(await holdings(store, sids)).toEqual({ moved: expected, left: 0 });
  });

  it('passes over a record whose session has gone: it expires on its own', async () => {
    const { store, now, clock } = await formatTwo(0);
    await connection(store, sidOf(1), 'c1', licenceOf(1), 1000);
    await connection(store, sidOf(2), 'c2', licenceOf(2));
    await store.del(keys.session(sidOf(2)));
    clock.at += 1000;
    expect(await upgradeFormat(store, now, opens)).toMatchObject({
      to: 3,
      moved: { licences: 0 },
    });
    expect(await licencesIndexed(store)).toEqual([]);
  });

  it('stopped after any batch, loses nothing: the next instance walks again and finishes', async () => {
    const { licences } = await formatTwo(7);
    let stops = 0;
    for (let after = 1; ; after++) {
      const { store, now } = await formatTwo(7);
      const stop = new AbortController();
      let batches = 0;
      const first = await upgradeFormat(store, now, {
        ...opens,
        batch: 2,
        signal: stop.signal,
        onBatch: () => {
          if (++batches === after) stop.abort(new Error('SIGTERM'));
        },
      }).catch((error: unknown) => error);
      if (!(first instanceof Error)) {
        // The walk took fewer batches than `after`: every boundary was tried.
        expect(first).toMatchObject({ to: 3 });
        break;
      }
      stops++;
      expect(await store.get(keys.dataFormat), `stopped after ${after}`).toBe('2');
      expect(await store.get(keys.dataFormatUpgrade)).toBeNull();
      expect((await licencesIndexed(store)).length).toBe(Math.min(after * 2, 7));
      expect(await upgradeFormat(store, now, { ...opens, batch: 2 })).toMatchObject({ to: 3 });
      expect(await licencesIndexed(store), `stopped after ${after}`).toEqual(licences);
    }
    expect(stops).toBe(4);
  });

  it('counts a record that cannot be opened, says which without its session id, and leaves it', async () => {
    const { store, now, licences } = await formatTwo(3);
    const sealedElsewhere = keys.connection(sidOf(9), 'c9');
    await connection(store, sidOf(9), 'c9', licenceOf(9));
    await store.setVersioned(sealedElsewhere, 1, '{}', DAY);
    const unreadable: unknown[] = [];
    const upgrade = await upgradeFormat(store, now, {
      ...opens,
      onUnreadable: (each) => unreadable.push(each),
    });
    expect(upgrade).toMatchObject({ to: 3, moved: { licences: 3 }, unreadable: 1 });
    expect(unreadable).toEqual([
      { record: 'baton:{…}:connection:c9', reason: 'no key for a record sealed under "old"' },
    ]);
    expect(JSON.stringify(unreadable)).not.toContain(sidOf(9));
    expect(await store.getVersioned(sealedElsewhere)).toEqual({ version: 2, value: '{}' });
    expect(await licencesIndexed(store)).toEqual(licences);
  });
});

describe('retryUpgrade', () => {
  it('takes the upgrade over once the lease of an instance that died runs out, and finishes it', async () => {
    const { store, now, clock, expected, sids } = await manySessions(5);
    await store.set(keys.dataFormatUpgrade, 'an instance that died', LEASE_MS);
    const waited: number[] = [];
    const upgrade = await retryUpgrade(store, now, {
      ...opens,
      wait: async (ms) => {
        waited.push(ms);
        clock.at += ms;
      },
    });
    expect(upgrade).toMatchObject({ from: 1, to: DATA_FORMAT, leftToAnother: false });
    expect(waited.reduce((sum, ms) => sum + ms, 0)).toBeGreaterThanOrEqual(LEASE_MS);
    expect(waited.every((ms) => ms <= 5000)).toBe(true);
    expect(await holdings(store, sids)).toEqual({ moved: expected, left: 0 });
  });

  it('ends, moving nothing, once the instance that holds the upgrade has finished it', async () => {
    const { store, now } = await manySessions(5);
    await store.set(keys.dataFormatUpgrade, 'another instance', LEASE_MS);
    let waits = 0;
    const upgrade = await retryUpgrade(store, now, {
      ...opens,
      wait: async () => {
        if (++waits === 3) await store.set(keys.dataFormat, String(DATA_FORMAT), DAY);
      },
    });
    expect(waits).toBe(3);
    expect(upgrade).toMatchObject({ from: DATA_FORMAT, to: DATA_FORMAT, leftToAnother: false });
    expect(upgrade.moved).toEqual({ indexed: 0, scheduled: 0, deadLetters: 0, licences: 0 });
  });

  it('stops waiting when asked', async () => {
    const { store, now } = await manySessions(1);
    await store.set(keys.dataFormatUpgrade, 'another instance', LEASE_MS);
    const stop = new AbortController();
    const retrying = retryUpgrade(store, now, {
      ...opens,
      signal: stop.signal,
      wait: async () => stop.abort(new Error('SIGTERM')),
    });
    await expect(retrying).rejects.toThrow('SIGTERM');
    expect(await store.get(keys.dataFormatUpgrade)).toBe('another instance');
  });
});
