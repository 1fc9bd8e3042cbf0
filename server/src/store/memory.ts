import type { Store, Versioned } from './types.ts';

type Entry =
  | { kind: 'string'; value: string; expiresAt: number }
  | { kind: 'versioned'; value: Versioned; expiresAt: number }
  | { kind: 'set'; value: Set<string>; expiresAt: number };

/**
 * The embedded store: Redis's semantics in one process, for running Baton locally without Redis.
 * Refused in production (config.ts). Expiry follows the injected clock.
 */
export function createMemoryStore(now: () => number = Date.now): Store {
  const entries = new Map<string, Entry>();
  const indexes = new Map<string, Map<string, number>>();

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
    async getVersioned(key) {
      const entry = live(key);
      return entry?.kind === 'versioned' ? { ...entry.value } : null;
    },
    async setVersioned(key, expected, value, ttlMs) {
      const entry = live(key);
      const current = entry?.kind === 'versioned' ? entry.value.version : 0;
      if (current !== expected) return false;
      entries.set(key, {
        kind: 'versioned',
        value: { version: expected + 1, value },
        expiresAt: now() + ttlMs,
      });
      sweep();
      return true;
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
      index.set(member, now() + ttlMs);
      indexes.set(key, index);
    },
    async indexRemove(key, member) {
      indexes.get(key)?.delete(member);
    },
    async indexCount(key) {
      const index = indexes.get(key);
      if (!index) return 0;
      const at = now();
      for (const [member, expiresAt] of index) if (expiresAt <= at) index.delete(member);
      return index.size;
    },
    async ping() {},
    async close() {
      entries.clear();
      indexes.clear();
    },
  };
}
