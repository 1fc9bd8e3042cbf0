import type { Store } from '../types.ts';
import type { Commands } from './commands.ts';
import {
  COUNTER_ADD,
  INDEX_COUNT,
  INDEX_MEMBERS,
  INDEX_PUT,
  LIST_POP_IF_HEAD,
  LIST_PUSH,
  LOG_ADD,
  SCHEDULE_PUT,
  SCHEDULE_REMOVE_DUE,
  SET_ADD,
  SET_MEMBERS,
  SET_REMOVE,
} from './scripts.ts';

type CollectionMethod =
  | 'listPush'
  | 'listHead'
  | 'listPopIfHead'
  | 'listLength'
  | 'schedulePut'
  | 'scheduleDue'
  | 'scheduleRemove'
  | 'scheduleSize'
  | 'counterAdd'
  | 'logAdd'
  | 'logNewest'
  | 'logSize'
  | 'setAdd'
  | 'setRemove'
  | 'setMembers'
  | 'indexPut'
  | 'indexRemove'
  | 'indexCount'
  | 'indexMembers';

/**
 * The Redis store's collections: lists (outboxes), schedules, counters, logs (dead letters), sets
 * of ids and indexes, each a Redis structure under one key.
 */
export function createCollections(commands: Commands): Pick<Store, CollectionMethod> {
  const { redis, guard, send, script, replicated } = commands;
  const { client } = redis;
  return {
    listPush: async (key, value, ttlMs) => {
      await script(LIST_PUSH, [key], [value, String(ttlMs)]);
      await replicated(key);
    },
    listHead: async (key) => (await send(key, ['LINDEX', key, '0'])) as string | null,
    listPopIfHead: async (key, value) => {
      const popped = (await script(LIST_POP_IF_HEAD, [key], [value])) === 1;
      if (popped) await replicated(key);
      return popped;
    },
    listLength: async (key) => Number(await send(key, ['LLEN', key])),
    schedulePut: async (key, member, atMs, options = {}) => {
      await script(
        SCHEDULE_PUT,
        [key],
        [
          String(atMs),
          member,
          options.onlyIfAbsent === true ? '1' : options.onlyIfLater === true ? '2' : '0',
          String(options.keepMs ?? 0),
        ],
      );
      await replicated(key);
    },
    scheduleDue: async (key, atMs, limit) => [
      ...((await send(key, [
        'ZRANGE',
        key,
        '-inf',
        atMs === Infinity ? '+inf' : String(atMs),
        'BYSCORE',
        'LIMIT',
        '0',
        String(limit),
      ])) as Iterable<string>),
    ],
    scheduleRemove: async (key, member, options = {}) => {
      if (options.dueBy === undefined) await guard(() => client.zRem(key, member));
      else await script(SCHEDULE_REMOVE_DUE, [key], [member, String(options.dueBy)]);
      await replicated(key);
    },
    scheduleSize: async (key) => Number(await send(key, ['ZCARD', key])),
    counterAdd: async (key, delta, ttlMs) =>
      Number(await script(COUNTER_ADD, [key], [String(delta), String(ttlMs)])),
    logAdd: async (key, member, atMs, bounds) => {
      const dropped = Number(
        await script(
          LOG_ADD,
          [key],
          [
            member,
            String(atMs),
            String(bounds.maxCount),
            String(bounds.minAtMs),
            String(bounds.ttlMs),
          ],
        ),
      );
      await replicated(key);
      return dropped;
    },
    logNewest: async (key, limit) => [
      ...((await send(key, ['ZRANGE', key, '0', String(limit - 1), 'REV'])) as Iterable<string>),
    ],
    logSize: async (key) => Number(await send(key, ['ZCARD', key])),
    setAdd: async (key, member, ttlMs) => {
      await script(SET_ADD, [key], [member, String(ttlMs)]);
      await replicated(key);
    },
    setRemove: async (key, member) => {
      await script(SET_REMOVE, [key], [member]);
      await replicated(key);
    },
    setMembers: async (key) => [...((await script(SET_MEMBERS, [key], [])) as Iterable<string>)],
    indexPut: async (key, member, ttlMs) => {
      await script(INDEX_PUT, [key], [member, String(ttlMs)]);
    },
    indexRemove: async (key, member) => {
      await guard(() => client.zRem(key, member));
    },
    indexCount: async (key) => Number(await script(INDEX_COUNT, [key], [])),
    indexMembers: async (key, prefix = '') => [
      ...((await script(INDEX_MEMBERS, [key], [prefix])) as Iterable<string>),
    ],
  };
}
