import { describe, expect, it } from 'vitest';
import type { Store } from './types.ts';

/**
 * The behaviour every Store must have. Runs against the embedded store (unit) and real Redis
 * (integration). `advance(ms)` moves the store's clock: injected for memory, real for Redis.
 */
export function storeContract(
  name: string,
  setup: () => { store: Store; advance: (ms: number) => Promise<void> },
): void {
  describe(`Store contract: ${name}`, () => {
    const key = (suffix: string) => `contract:${Math.random().toString(36).slice(2)}:${suffix}`;

    it('sets, gets and expires a value', async () => {
      const { store, advance } = setup();
      const k = key('a');
      await store.set(k, 'one', 50);
      expect(await store.get(k)).toBe('one');
      await advance(60);
      expect(await store.get(k)).toBeNull();
    });

    it('counts the members of an index that have not expired, each on its own clock', async () => {
      const { store, advance } = setup();
      const k = key('index');
      await store.indexPut(k, 'a', 10_000);
      await store.indexPut(k, 'b', 10_000);
      await store.indexPut(k, 'c', 10_000);
      expect(await store.indexCount(k)).toBe(3);
      await store.indexPut(k, 'c', 0);
      expect(await store.indexCount(k)).toBe(2);
      await store.indexRemove(k, 'b');
      expect(await store.indexCount(k)).toBe(1);
      await advance(10_001);
      expect(await store.indexCount(k)).toBe(0);
      expect(await store.indexCount(key('none'))).toBe(0);
    });

    it('lists the members of an index that have not expired, and drops the expired on a put', async () => {
      const { store, advance } = setup();
      const k = key('members');
      await store.indexPut(k, 'a', 10_000);
      await store.indexPut(k, 'b', 10_000);
      await store.indexPut(k, 'gone', 10_000);
      await store.indexRemove(k, 'gone');
      // Expired at once (Redis scores on its own clock: a test cannot move it for one member).
      await store.indexPut(k, 'expired', 0);
      expect((await store.indexMembers(k)).sort()).toEqual(['a', 'b']);
      await store.indexPut(k, 'x:1', 10_000);
      await store.indexPut(k, 'x:2', 10_000);
      await store.indexPut(k, 'xy:3', 10_000);
      expect((await store.indexMembers(k, 'x:')).sort()).toEqual(['x:1', 'x:2']);
      expect(await store.indexMembers(k, 'z')).toEqual([]);
      // Expired, then dropped by the next put without anyone counting or listing them.
      const uncounted = key('uncounted');
      await store.indexPut(uncounted, 'old', 0);
      await store.indexPut(uncounted, 'new', 10_000);
      expect((await store.sortedRange(uncounted, 10)).map(({ member }) => member)).toEqual(['new']);
      await advance(10_001);
      expect(await store.indexMembers(k)).toEqual([]);
      expect(await store.indexMembers(key('none'))).toEqual([]);
    });

    it('scans the keys whose names match a pattern, of every kind, and only live ones', async () => {
      const { store, advance } = setup();
      const prefix = key('scan');
      const names = {
        value: `${prefix}:{s1}:connection:c1`,
        versioned: `${prefix}:{s2}:connection:c2`,
        set: `${prefix}:{s1}:connections`,
        index: `${prefix}:{index}:connection:c3`,
        expired: `${prefix}:{s3}:connection:c4`,
      };
      await store.set(names.value, 'v', 10_000);
      await store.setVersioned(names.versioned, 0, 'v', 10_000);
      await store.setAdd(names.set, 'c1', 10_000);
      await store.indexPut(names.index, 'm', 10_000);
      await store.set(names.expired, 'v', 10);
      await advance(20);
      const scanned: string[] = [];
      for await (const found of store.scan(`${prefix}:{*}:connection:*`)) scanned.push(found);
      expect([...new Set(scanned)].sort()).toEqual(
        [names.value, names.versioned, names.index].sort(),
      );
      const none: string[] = [];
      for await (const found of store.scan(`${prefix}:nothing:*`)) none.push(found);
      expect(none).toEqual([]);
    });

    it('reads a value with the time it has left on its own clock', async () => {
      const { store, advance } = setup();
      const k = key('left');
      await store.set(k, 'one', 10_000);
      await advance(20);
      const read = await store.getWithTtl(k);
      expect(read?.value).toBe('one');
      expect(read!.ttlMs).toBeGreaterThan(9_000);
      expect(read!.ttlMs).toBeLessThanOrEqual(9_980);
      expect(await store.getWithTtl(key('absent'))).toBeNull();
    });

    it('sets a time to live anew, on any kind of key, and ignores an absent one', async () => {
      const { store, advance } = setup();
      const [plain, versioned, set] = [key('plain'), key('versioned'), key('set')];
      await store.set(plain, 'one', 50);
      await store.setVersioned(versioned, 0, 'v', 50);
      await store.setAdd(set, 'm', 50);
      for (const k of [plain, versioned, set]) await store.expire(k, 10_000);
      await store.expire(key('absent'), 10_000);
      await advance(60);
      expect(await store.get(plain)).toBe('one');
      expect((await store.getVersioned(versioned))?.value).toBe('v');
      expect(await store.setMembers(set)).toEqual(['m']);
      expect(await store.get(key('absent'))).toBeNull();
      for (const k of [plain, versioned, set]) await store.expire(k, 20);
      await advance(30);
      expect(await store.get(plain)).toBeNull();
      expect(await store.getVersioned(versioned)).toBeNull();
      expect(await store.setMembers(set)).toEqual([]);
    });

    it('creates a key only when it is absent', async () => {
      const { store } = setup();
      const k = key('nx');
      expect(await store.setIfAbsent(k, 'first', 10_000)).toBe(true);
      expect(await store.setIfAbsent(k, 'second', 10_000)).toBe(false);
      expect(await store.get(k)).toBe('first');
    });

    it('gives a taken value to exactly one of many concurrent takers', async () => {
      const { store } = setup();
      const k = key('take');
      await store.set(k, 'once', 10_000);
      const results = await Promise.all(Array.from({ length: 20 }, () => store.take(k)));
      expect(results.filter((value) => value === 'once')).toHaveLength(1);
      expect(await store.get(k)).toBeNull();
    });

    it('deletes a lock only for its owner', async () => {
      const { store } = setup();
      const k = key('lock');
      await store.set(k, 'owner-1', 10_000);
      expect(await store.deleteIfEquals(k, 'owner-2')).toBe(false);
      expect(await store.get(k)).toBe('owner-1');
      expect(await store.deleteIfEquals(k, 'owner-1')).toBe(true);
      expect(await store.get(k)).toBeNull();
    });

    it('renews a lease only for its owner', async () => {
      const { store, advance } = setup();
      const k = key('lease');
      await store.set(k, 'owner-1', 50);
      expect(await store.expireIfEquals(k, 'owner-2', 10_000)).toBe(false);
      expect(await store.expireIfEquals(k, 'owner-1', 10_000)).toBe(true);
      await advance(60);
      expect(await store.get(k)).toBe('owner-1');
      expect(await store.expireIfEquals(key('absent'), 'owner-1', 10_000)).toBe(false);
    });

    it('writes a versioned record only over the version it read', async () => {
      const { store } = setup();
      const k = key('v');
      expect(await store.getVersioned(k)).toBeNull();
      expect(await store.setVersioned(k, 0, 'v1', 10_000)).toBe(true);
      expect(await store.setVersioned(k, 0, 'stale', 10_000)).toBe(false);
      expect(await store.getVersioned(k)).toEqual({ version: 1, value: 'v1' });
      const writes = await Promise.all([
        store.setVersioned(k, 1, 'a', 10_000),
        store.setVersioned(k, 1, 'b', 10_000),
      ]);
      expect(writes.filter(Boolean)).toHaveLength(1);
      expect((await store.getVersioned(k))?.version).toBe(2);
    });

    it('expires a versioned record', async () => {
      const { store, advance } = setup();
      const k = key('vx');
      await store.setVersioned(k, 0, 'v1', 50);
      await advance(60);
      expect(await store.getVersioned(k)).toBeNull();
    });

    it('keeps a set of members with a TTL', async () => {
      const { store, advance } = setup();
      const k = key('set');
      await store.setAdd(k, 'x', 50);
      await store.setAdd(k, 'y', 50);
      await store.setAdd(k, 'x', 50);
      expect((await store.setMembers(k)).sort()).toEqual(['x', 'y']);
      await store.setRemove(k, 'x');
      expect(await store.setMembers(k)).toEqual(['y']);
      await advance(60);
      expect(await store.setMembers(k)).toEqual([]);
    });

    it('deletes several keys', async () => {
      const { store } = setup();
      const [a, b] = [key('d1'), key('d2')];
      await store.set(a, '1', 10_000);
      await store.setVersioned(b, 0, '2', 10_000);
      await store.del(a, b);
      expect(await store.get(a)).toBeNull();
      expect(await store.getVersioned(b)).toBeNull();
    });

    it('records an event with a versioned write, and only when the write lands', async () => {
      const { store } = setup();
      const tag = Math.random().toString(36).slice(2);
      const [record, outbox] = [`contract:{${tag}}:record`, `contract:{${tag}}:outbox`];
      expect(
        await store.setVersioned(record, 0, 'v1', 10_000, {
          key: outbox,
          entry: 'e1',
          ttlMs: 10_000,
        }),
      ).toBe(true);
      expect(
        await store.setVersioned(record, 0, 'lost', 10_000, {
          key: outbox,
          entry: 'e-lost',
          ttlMs: 10_000,
        }),
      ).toBe(false);
      expect(
        await store.setVersioned(record, 1, 'v2', 10_000, {
          key: outbox,
          entry: 'e2',
          ttlMs: 10_000,
        }),
      ).toBe(true);
      expect(await store.listRange(outbox, 0, -1)).toEqual(['e1', 'e2']);

      expect(await store.delRecording([record], { key: outbox, entry: 'e3', ttlMs: 10_000 })).toBe(
        true,
      );
      expect(await store.getVersioned(record)).toBeNull();
      expect(await store.listLength(outbox)).toBe(3);
    });

    it('records a deletion’s event once: only the deletion that found the key', async () => {
      const { store } = setup();
      const tag = Math.random().toString(36).slice(2);
      const [record, lock, outbox] = [
        `contract:{${tag}}:record`,
        `contract:{${tag}}:lock`,
        `contract:{${tag}}:outbox`,
      ];
      await store.setVersioned(record, 0, 'v1', 10_000);
      await store.set(lock, 'held', 10_000);
      const recorded = await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          store.delRecording([record, lock], { key: outbox, entry: `e${n}`, ttlMs: 10_000 }),
        ),
      );
      expect(recorded.filter(Boolean)).toHaveLength(1);
      expect(await store.listLength(outbox)).toBe(1);
      expect(await store.get(lock)).toBeNull();
    });

    it('adds to a counter that starts at zero', async () => {
      const { store } = setup();
      const k = key('counter');
      expect(await store.counterAdd(k, 1, 10_000)).toBe(1);
      expect(await store.counterAdd(k, 2, 10_000)).toBe(3);
      expect(await store.counterAdd(k, -4, 10_000)).toBe(-1);
      expect(await store.get(k)).toBe('-1');
    });

    it('keeps a log bounded by age and count, newest first', async () => {
      const { store } = setup();
      const k = key('log');
      const bounds = (minAtMs: number) => ({ maxCount: 3, minAtMs, ttlMs: 10_000 });
      expect(await store.logAdd(k, 'a', 1000, bounds(0))).toBe(0);
      expect(await store.logAdd(k, 'b', 2000, bounds(0))).toBe(0);
      expect(await store.logAdd(k, 'c', 3000, bounds(0))).toBe(0);
      // Over the count: the oldest goes.
      expect(await store.logAdd(k, 'd', 4000, bounds(0))).toBe(1);
      expect(await store.logNewest(k, 10)).toEqual(['d', 'c', 'b']);
      // Older than the bound: gone, whatever the count.
      expect(await store.logAdd(k, 'e', 5000, bounds(3500))).toBe(2);
      expect(await store.logNewest(k, 1)).toEqual(['e']);
      expect(await store.logSize(k)).toBe(2);
      expect(await store.logSize(key('none'))).toBe(0);
    });

    it('pops a list’s head only while it is still the head', async () => {
      const { store, advance } = setup();
      const k = key('list');
      expect(await store.listHead(k)).toBeNull();
      await store.listPush(k, 'a', 50);
      await store.listPush(k, 'b', 10_000);
      expect(await store.listHead(k)).toBe('a');
      expect(await store.listPopIfHead(k, 'b')).toBe(false);
      expect(await store.listPopIfHead(k, 'a')).toBe(true);
      expect(await store.listPopIfHead(k, 'a')).toBe(false);
      expect(await store.listRange(k, 0, -1)).toEqual(['b']);
      // A later, shorter time to live never shortens the list's.
      await store.listPush(k, 'c', 10);
      await advance(60);
      expect(await store.listRange(k, -1, -1)).toEqual(['c']);
    });

    it('reads the lowest-scored members of a schedule, with their scores, leaving them', async () => {
      const { store } = setup();
      const k = key('range-sorted');
      await store.schedulePut(k, 'b', 2000);
      await store.schedulePut(k, 'a', 1000);
      await store.schedulePut(k, 'c', 3000);
      expect(await store.sortedRange(k, 2)).toEqual([
        { member: 'a', score: 1000 },
        { member: 'b', score: 2000 },
      ]);
      expect(await store.sortedRange(k, 5)).toHaveLength(3);
      await store.scheduleRemove(k, 'a');
      expect(await store.sortedRange(k, 1)).toEqual([{ member: 'b', score: 2000 }]);
      expect(await store.sortedRange(key('none'), 5)).toEqual([]);
    });

    it('keeps a schedule: due members earliest first, a kept time, removal', async () => {
      const { store } = setup();
      const k = key('schedule');
      await store.schedulePut(k, 'late', 3000);
      await store.schedulePut(k, 'early', 1000);
      await store.schedulePut(k, 'early', 5000, { onlyIfAbsent: true });
      await store.schedulePut(k, 'moved', 9000);
      await store.schedulePut(k, 'moved', 2000);
      expect(await store.scheduleDue(k, 2500, 10)).toEqual(['early', 'moved']);
      expect(await store.scheduleDue(k, 9999, 2)).toEqual(['early', 'moved']);
      expect(await store.scheduleSize(k)).toBe(3);
      await store.scheduleRemove(k, 'early');
      expect(await store.scheduleDue(k, 9999, 10)).toEqual(['moved', 'late']);
    });

    it('moves a member only later when asked, and removes it only once due when asked', async () => {
      const { store } = setup();
      const k = key('schedule');
      await store.schedulePut(k, 'a', 1000, { onlyIfLater: true });
      await store.schedulePut(k, 'a', 4000, { onlyIfLater: true });
      await store.schedulePut(k, 'b', 6000);
      await store.schedulePut(k, 'b', 2000, { onlyIfLater: true });
      expect(await store.scheduleDue(k, 3999, 10)).toEqual([]);
      expect(await store.scheduleDue(k, 9999, 10)).toEqual(['a', 'b']);
      await store.scheduleRemove(k, 'a', { dueBy: 3999 });
      await store.scheduleRemove(k, 'b', { dueBy: 6000 });
      await store.scheduleRemove(k, 'absent', { dueBy: 9999 });
      expect(await store.scheduleDue(k, 9999, 10)).toEqual(['a']);
      await store.scheduleRemove(k, 'a', { dueBy: 4000 });
      expect(await store.scheduleSize(k)).toBe(0);
    });
  });
}
