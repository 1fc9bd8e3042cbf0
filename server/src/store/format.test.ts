import { describe, expect, it } from 'vitest';
import {
  DATA_FORMAT,
  DataFormatError,
  retryUpgrade,
  upgradeFormat,
  type SetAside,
} from './format.ts';
import { format1Keys } from './format1/keys.ts';
import { eventShard, indexMember, indexShard, keys } from './keys.ts';
import { createMemoryStore } from './memory.ts';
import type { Store } from './types.ts';

const T0 = Date.UTC(2026, 10, 1, 9, 0);
const SID = 'Qm9uam91ciBsZXMgYW1pcywgYm9uam91ciB0b3VzIQ0';
const DAY = 24 * 3600 * 1000;
/** How long the upgrade's lease lasts (format.ts): an instance that died holds it this long. */
const LEASE_MS = 60_000;

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
  };
  for (let i = 0; i < sessions; i++) {
    const sid = sidOf(i);
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
    },
    left:
      (await store.indexCount(format1Keys.connectionIndex('connected'))) +
      (await store.indexCount(format1Keys.connectionIndex('disconnected'))) +
      (await store.scheduleSize(format1Keys.eventsDue)) +
      (await store.listLength(format1Keys.deadLetters)),
  };
}

const READS = new Set([
  'get',
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
  it('moves format 1 into the shards of format 2, and says the store is format 2', async () => {
    const { store, now, letter } = await formatOne();
    const upgrade = await upgradeFormat(store, now);
    expect(upgrade).toMatchObject({
      from: 1,
      to: DATA_FORMAT,
      moved: { indexed: 2, scheduled: 1, deadLetters: 1 },
      setAside: 0,
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

  it('does nothing more on a store already of format 2', async () => {
    const { store, now } = await formatOne();
    await upgradeFormat(store, now);
    expect(await upgradeFormat(store, now)).toMatchObject({
      from: DATA_FORMAT,
      to: DATA_FORMAT,
      moved: { indexed: 0, scheduled: 0, deadLetters: 0 },
    });
  });

  it('leaves the upgrade to the instance already doing it', async () => {
    const { store, now } = await formatOne();
    await store.set(keys.dataFormatUpgrade, 'another instance', 60_000);
    expect(await upgradeFormat(store, now)).toMatchObject({ from: 1, to: 1, leftToAnother: true });
    expect(await store.get(keys.dataFormat)).toBeNull();
  });

  it('refuses a store of a later format: an older broker must not write over newer data', async () => {
    const { store, now } = await formatOne();
    await store.set(keys.dataFormat, String(DATA_FORMAT + 1), 60_000);
    await expect(upgradeFormat(store, now)).rejects.toThrow(DataFormatError);
    await expect(upgradeFormat(store, now)).rejects.toThrow(/format 3.*writes format 2/);
  });

  describe('when the instance stops midway', () => {
    it('loses nothing, wherever it stops: the next instance moves the rest once its lease runs out', async () => {
      const { expected, sids } = await manySessions(5);
      let stops = 0;
      for (let writes = 0; ; writes++) {
        const { store, now, clock } = await manySessions(5);
        const stopping = stoppingAfter(store, writes);
        const first = await upgradeFormat(stopping.store, now, { batch: 2 }).catch(() => null);
        if (!stopping.stopped()) {
          // It never stopped: every point before this one was tried.
          expect(first).toMatchObject({ to: DATA_FORMAT });
          break;
        }
        stops++;
        clock.at += LEASE_MS;
        const next = await upgradeFormat(store, now, { batch: 2 });
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

      expect(await upgradeFormat(store, now, { batch: 2 })).toMatchObject({
        to: DATA_FORMAT,
        moved: { indexed: expected.indexed.length - 2 },
      });
      expect(await holdings(store, sids)).toEqual({ moved: expected, left: 0 });
    });

    it('stops moving once its lease is lost, and leaves the format to whoever holds it', async () => {
      const { store, now } = await manySessions(5);
      const upgrade = await upgradeFormat(store, now, {
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

describe('retryUpgrade', () => {
  it('takes the upgrade over once the lease of an instance that died runs out, and finishes it', async () => {
    const { store, now, clock, expected, sids } = await manySessions(5);
    await store.set(keys.dataFormatUpgrade, 'an instance that died', LEASE_MS);
    const waited: number[] = [];
    const upgrade = await retryUpgrade(store, now, {
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
      wait: async () => {
        if (++waits === 3) await store.set(keys.dataFormat, String(DATA_FORMAT), DAY);
      },
    });
    expect(waits).toBe(3);
    expect(upgrade).toMatchObject({ from: DATA_FORMAT, to: DATA_FORMAT, leftToAnother: false });
    expect(upgrade.moved).toEqual({ indexed: 0, scheduled: 0, deadLetters: 0 });
  });

  it('stops waiting when asked', async () => {
    const { store, now } = await manySessions(1);
    await store.set(keys.dataFormatUpgrade, 'another instance', LEASE_MS);
    const stop = new AbortController();
    const retrying = retryUpgrade(store, now, {
      signal: stop.signal,
      wait: async () => stop.abort(new Error('SIGTERM')),
    });
    await expect(retrying).rejects.toThrow('SIGTERM');
    expect(await store.get(keys.dataFormatUpgrade)).toBe('another instance');
  });
});
