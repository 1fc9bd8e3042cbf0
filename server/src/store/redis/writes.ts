import type { Store } from '../types.ts';
import type { Commands } from './commands.ts';
import { DELETE_IF_EQUALS, DEL_RECORDING, EXPIRE_IF_EQUALS, SET_VERSIONED } from './scripts.ts';

/**
 * The Redis store's writes of keys (strings and versioned records), each followed, when it must
 * survive a failover, by the WAIT for replicas (commands.ts, `replicated`).
 */
export function createWrites(
  commands: Commands,
): Pick<
  Store,
  | 'set'
  | 'setIfAbsent'
  | 'take'
  | 'del'
  | 'expire'
  | 'deleteIfEquals'
  | 'expireIfEquals'
  | 'setVersioned'
  | 'delRecording'
> {
  const { redis, guard, script, replicated } = commands;
  const { client } = redis;
  return {
    set: async (key, value, ttlMs) => {
      await guard(() => client.set(key, value, { expiration: { type: 'PX', value: ttlMs } }));
      await replicated(key);
    },
    setIfAbsent: async (key, value, ttlMs) =>
      (await guard(() =>
        client.set(key, value, { expiration: { type: 'PX', value: ttlMs }, condition: 'NX' }),
      )) === 'OK',
    take: async (key) => {
      const value = await guard(() => client.getDel(key));
      if (value !== null) await replicated(key);
      return value;
    },
    del: async (...keys) => {
      // One key at a time keeps every command on one slot when the keys span several (Cluster).
      if (keys.length === 0) return;
      await guard(() => Promise.all(keys.map((key) => client.del(key))));
      await Promise.all(keys.map(replicated));
    },
    expire: async (key, ttlMs) => {
      await guard(() => client.pExpire(key, ttlMs));
      await replicated(key);
    },
    deleteIfEquals: async (key, value) => (await script(DELETE_IF_EQUALS, [key], [value])) === 1,
    expireIfEquals: async (key, value, ttlMs) =>
      (await script(EXPIRE_IF_EQUALS, [key], [value, String(ttlMs)])) === 1,
    setVersioned: async (key, expected, value, ttlMs, outbox) => {
      const written =
        (await script(
          SET_VERSIONED,
          outbox ? [key, outbox.key] : [key],
          [String(expected), value, String(ttlMs)].concat(
            outbox ? [outbox.entry, String(outbox.ttlMs)] : [],
          ),
        )) === 1;
      if (written) await replicated(key);
      return written;
    },
    delRecording: async (keys, outbox) => {
      const recorded =
        (await script(
          DEL_RECORDING,
          [...keys, outbox.key],
          [outbox.entry, String(outbox.ttlMs)],
        )) === 1;
      if (recorded) await replicated(outbox.key);
      return recorded;
    },
  };
}
