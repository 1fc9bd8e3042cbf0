import type { Format1Reads } from '../types.ts';

/**
 * How the Redis store reads what data format 1 left, until the upgrade has moved it or a write has
 * replaced it: a record stored as a hash {v, d}, a session's ids as a set, and the old keys the
 * upgrade copies batch by batch. The Redis store (../redis/) takes each from here; none of it
 * imports the Redis store, so this folder goes whole once format 1 is no longer read.
 */

/** A raw command on the node that holds `key`, bounded and counted as every command of the store. */
type Send = (key: string, args: string[]) => Promise<unknown>;
/** A script on the node that holds `keys` (within the bound of the read it is part of). */
type Evaluate = (source: string, keys: string[]) => Promise<unknown>;

/** A value of format 1 (a hash {v, d}), as format 2 writes it: `<version>:<value>`, or nil. */
export const GET_VERSIONED_HASH = `
local v = redis.call('HMGET', KEYS[1], 'v', 'd')
if not v[1] or not v[2] then return nil end
return v[1] .. ':' .. v[2]`;

/**
 * The raw `<version>:<value>` of a record whose GET failed with `error`: format 1's hash read
 * instead (GET_VERSIONED_HASH) when the key holds one (WRONGTYPE); any other error is thrown on.
 */
export function readHashRecord(error: unknown, key: string, evaluate: Evaluate): Promise<unknown> {
  if (!String((error as Error).message).startsWith('WRONGTYPE')) throw error;
  return evaluate(GET_VERSIONED_HASH, [key]);
}

/** Lua, in `version_of(key)` once `kind` is known: a hash {v, d} of format 1's version. */
export const LUA_HASH_VERSION = `if kind == 'hash' then return redis.call('HGET', key, 'v') end`;

/**
 * Lua, run first on KEYS[1] by scripts.ts's SET_*: a set of ids format 1 wrote becomes the hash of
 * empty values format 2 keeps, keeping its TTL.
 */
export const LUA_SET_AS_HASH = `local function as_hash(key)
  if redis.call('TYPE', key)['ok'] ~= 'set' then return end
  local members = redis.call('SMEMBERS', key)
  local ttl = redis.call('PTTL', key)
  redis.call('DEL', key)
  for _, member in ipairs(members) do redis.call('HSET', key, member, '') end
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
end
as_hash(KEYS[1])`;

/** Format1Reads on Redis: ZRANGE WITHSCORES and LRANGE, each on the node that holds the key. */
export function format1Reads(send: Send): Format1Reads {
  return {
    sortedRange: async (key, count) => {
      const reply = (await send(key, [
        'ZRANGE',
        key,
        '0',
        String(count - 1),
        'WITHSCORES',
      ])) as unknown[];
      // RESP3 answers pairs; RESP2 a flat list.
      const flat = reply.flat() as (string | number)[];
      const range: { member: string; score: number }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2)
        range.push({ member: String(flat[i]), score: Number(flat[i + 1]) });
      return range;
    },
    listRange: async (key, start, stop) => [
      ...((await send(key, ['LRANGE', key, String(start), String(stop)])) as Iterable<string>),
    ],
  };
}
