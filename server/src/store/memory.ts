import type { OutboxWrite, Store, Versioned } from './types.ts';

type Entry =
  | { kind: 'list'; value: string[]; expiresAt: number }
  | { kind: 'string'; value: string; expiresAt: number }
  | { kind: 'versioned'; value: Versioned; expiresAt: number }
  | { kind: 'set'; value: Set<string>; expiresAt: number }
  /** A log bounded by age and count (Store.logAdd): members and when each was added. */
  | { kind: 'log'; value: Map<string, number>; expiresAt: number };

/**
 * The embedded store: Redis's semantics in one process, for running Baton locally without Redis.
 * Refused in production (config.ts). Expiry follows the injected clock.
 */
export function createMemoryStore(now: () => number = Date.now): Store {
  const entries = new Map<string, Entry>();
  const indexes = new Map<string, Map<string, number>>();
  const schedules = new Map<string, Map<string, number>>();
  const listAt = (key: string): string[] => {
    const entry = live(key);
    return entry?.kind === 'list' ? entry.value : [];
  };
  const push = ({ key, entry, ttlMs }: OutboxWrite): void => {
    const current = live(key);
    const expiresAt = Math.max(now() + ttlMs, current?.expiresAt ?? 0);
    entries.set(key, { kind: 'list', value: [...listAt(key), entry], expiresAt });
  };

  const live = (key: string): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  };
  const stringAt = (key: string): string | null => {
    const entry = live(key);
    return entry?.kind === 'string' ? entry.value : null;
  };
  const dropExpired = (index: Map<string, number>): void => {
    const at = now();
    for (const [member, expiresAt] of index) if (expiresAt <= at) index.delete(member);
  };
  // Expired entries are otherwise only dropped when read; sweep now and then to bound memory.
  let writes = 0;
  const sweep = (): void => {
    if (++writes % 1000 !== 0) return;
    for (const key of entries.keys()) live(key);
  };

  return {
    async get(key) {
      return stringAt(key);
    },
    async getWithTtl(key) {
      const value = stringAt(key);
      const entry = entries.get(key);
      return value === null || !entry ? null : { value, ttlMs: entry.expiresAt - now() };
    },
    async set(key, value, ttlMs) {
      entries.set(key, { kind: 'string', value, expiresAt: now() + ttlMs });
      sweep();
    },
    async setIfAbsent(key, value, ttlMs) {
      if (live(key)) return false;
      entries.set(key, { kind: 'string', value, expiresAt: now() + ttlMs });
      sweep();
      return true;
    },
    async take(key) {
      const value = stringAt(key);
      if (value !== null) entries.delete(key);
      return value;
    },
    async del(...keys) {
      for (const key of keys) entries.delete(key);
    },
    async expire(key, ttlMs) {
      const entry = live(key);
      if (entry) entry.expiresAt = now() + ttlMs;
    },
    async deleteIfEquals(key, value) {
      if (stringAt(key) !== value) return false;
      entries.delete(key);
      return true;
    },
    async expireIfEquals(key, value, ttlMs) {
      const entry = live(key);
      if (entry?.kind !== 'string' || entry.value !== value) return false;
      entry.expiresAt = now() + ttlMs;
      return true;
    },
    async getVersioned(key) {
      const entry = live(key);
      // Frozen, and the same object until the key is written again, as Redis's kept answers are.
      return entry?.kind === 'versioned' ? entry.value : null;
    },
    async setVersioned(key, expected, value, ttlMs, outbox) {
      const entry = live(key);
      const current = entry?.kind === 'versioned' ? entry.value.version : 0;
      if (current !== expected) return false;
      entries.set(key, {
        kind: 'versioned',
        value: Object.freeze({ version: expected + 1, value }),
        expiresAt: now() + ttlMs,
      });
      if (outbox) push(outbox);
      sweep();
      return true;
    },
    async delRecording(keys, outbox) {
      const existed = keys[0] !== undefined && live(keys[0]) !== undefined;
      for (const key of keys) entries.delete(key);
      if (existed) push(outbox);
      return existed;
    },
    async listPush(key, value, ttlMs) {
      push({ key, entry: value, ttlMs });
    },
    async listHead(key) {
      return listAt(key)[0] ?? null;
    },
    async listPopIfHead(key, value) {
      const list = listAt(key);
      if (list[0] !== value) return false;
      list.shift();
      if (list.length === 0) entries.delete(key);
      return true;
    },
    async listLength(key) {
      return listAt(key).length;
    },
    async schedulePut(key, member, atMs, options = {}) {
      const schedule = schedules.get(key) ?? new Map<string, number>();
      const at = schedule.get(member);
      const keep =
        at !== undefined &&
        (options.onlyIfAbsent === true || (options.onlyIfLater === true && at >= atMs));
      if (!keep) schedule.set(member, atMs);
      schedules.set(key, schedule);
    },
    async scheduleDue(key, atMs, limit) {
      return [...(schedules.get(key) ?? new Map<string, number>())]
        .filter(([, at]) => at <= atMs)
        .sort(([a, x], [b, y]) => x - y || a.localeCompare(b))
        .slice(0, limit)
        .map(([member]) => member);
    },
    async scheduleRemove(key, member, options = {}) {
      const at = schedules.get(key)?.get(member);
      if (at === undefined || (options.dueBy !== undefined && at > options.dueBy)) return;
      schedules.get(key)?.delete(member);
    },
    async scheduleSize(key) {
      return schedules.get(key)?.size ?? 0;
    },
    async counterAdd(key, delta, ttlMs) {
      const value = Number(stringAt(key) ?? 0) + delta;
      entries.set(key, { kind: 'string', value: String(value), expiresAt: now() + ttlMs });
      return value;
    },
    async logAdd(key, member, atMs, bounds) {
      const entry = live(key);
      const log = entry?.kind === 'log' ? entry.value : new Map<string, number>();
      log.set(member, atMs);
      // Oldest first: by age, then by count, as the Redis script drops them.
      const sorted = [...log].sort(([a, x], [b, y]) => x - y || a.localeCompare(b));
      const young = sorted.filter(([, at]) => at >= bounds.minAtMs);
      const kept = new Set(young.slice(Math.max(0, young.length - bounds.maxCount)));
      let dropped = 0;
      for (const each of sorted) {
        if (kept.has(each)) continue;
        log.delete(each[0]);
        dropped++;
      }
      const expiresAt = Math.max(now() + bounds.ttlMs, entry?.expiresAt ?? 0);
      entries.set(key, { kind: 'log', value: log, expiresAt });
      return dropped;
    },
    async logNewest(key, limit) {
      const entry = live(key);
      if (entry?.kind !== 'log') return [];
      return [...entry.value]
        .sort(([a, x], [b, y]) => y - x || b.localeCompare(a))
        .slice(0, limit)
        .map(([member]) => member);
    },
    async logSize(key) {
      const entry = live(key);
      return entry?.kind === 'log' ? entry.value.size : 0;
    },
    async setAdd(key, member, ttlMs) {
      const entry = live(key);
      const members = entry?.kind === 'set' ? entry.value : new Set<string>();
      members.add(member);
      entries.set(key, { kind: 'set', value: members, expiresAt: now() + ttlMs });
    },
    async setRemove(key, member) {
      const entry = live(key);
      if (entry?.kind !== 'set') return;
      entry.value.delete(member);
      if (entry.value.size === 0) entries.delete(key);
    },
    async setMembers(key) {
      const entry = live(key);
      return entry?.kind === 'set' ? [...entry.value] : [];
    },
    async indexPut(key, member, ttlMs) {
      const index = indexes.get(key) ?? new Map<string, number>();
      dropExpired(index);
      index.set(member, now() + ttlMs);
      indexes.set(key, index);
    },
    async indexRemove(key, member) {
      indexes.get(key)?.delete(member);
    },
    async indexCount(key) {
      const index = indexes.get(key);
      if (!index) return 0;
      dropExpired(index);
      return index.size;
    },
    async indexMembers(key, prefix = '') {
      const index = indexes.get(key);
      if (!index) return [];
      dropExpired(index);
      return [...index.keys()].filter((member) => member.startsWith(prefix));
    },
    async *scan(pattern) {
      const matches = globToRegExp(pattern);
      const names = [...entries.keys()].filter((key) => live(key) !== undefined);
      // Copied first: the caller may write while it walks, as it may on Redis.
      for (const key of [...names, ...indexes.keys(), ...schedules.keys()])
        if (matches.test(key)) yield key;
    },
    // Format1Reads (types.ts): the upgrade's only, gone with format 1.
    async sortedRange(key, count) {
      return [...(indexes.get(key) ?? schedules.get(key) ?? new Map<string, number>())]
        .sort(([a, x], [b, y]) => x - y || a.localeCompare(b))
        .slice(0, count)
        .map(([member, score]) => ({ member, score }));
    },
    async listRange(key, start, stop) {
      const list = listAt(key);
      const at = (i: number) => (i < 0 ? list.length + i : i);
      return list.slice(Math.max(0, at(start)), at(stop) + 1);
    },
    async ping() {},
    async close() {
      entries.clear();
      indexes.clear();
      schedules.clear();
    },
  };
}

/** A Redis glob (`*`, `?`, `\\` escaping; no classes) as a regular expression over whole keys. */
function globToRegExp(pattern: string): RegExp {
  const escape = (char: string) => char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const wildcards: Record<string, string> = { '*': '.*', '?': '.' };
  // One token at a time: an escaped character, or any other (a wildcard, or itself).
  const source = [...pattern.matchAll(/\\(.)|(.)/gs)]
    .map(([, escaped, char = '']) =>
      escaped !== undefined ? escape(escaped) : (wildcards[char] ?? escape(char)),
    )
    .join('');
  return new RegExp(`^${source}$`, 's');
}
