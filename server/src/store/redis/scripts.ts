import { LUA_HASH_VERSION, LUA_SET_AS_HASH } from '../format1/redis.ts';

/**
 * The Lua scripts of the Redis store (store.ts): each does one step atomically, on one slot (every
 * key a script names shares a hash tag). What of them reads data format 1 comes from
 * ../format1/redis.ts.
 */
/** Append ARGV[i] to the list KEYS[k], which then lives at least ARGV[i + 1] ms. */
const PUSH = `local function push(k, i)
  redis.call('RPUSH', KEYS[k], ARGV[i])
  local ttl = tonumber(ARGV[i + 1])
  if redis.call('PTTL', KEYS[k]) < ttl then redis.call('PEXPIRE', KEYS[k], ttl) end
end`;

/**
 * A versioned value's version, in either format: a string `<version>:<value>` (data format 2), or
 * a hash {v, d} (format 1, read until the value is next written).
 */
const VERSION_OF = `local function version_of(key)
  local kind = redis.call('TYPE', key).ok
  if kind == 'string' then return string.match(redis.call('GET', key), '^(%d+):') end
  ${LUA_HASH_VERSION}
  return nil
end`;

/**
 * Writes ARGV[2] as version ARGV[1] + 1 when the stored version is still ARGV[1] (a hash of format
 * 1 is replaced by the string). KEYS[2], when given, is an outbox on the record's slot: the event
 * goes in with the write.
 */
export const SET_VERSIONED = `${PUSH}
${VERSION_OF}
if (version_of(KEYS[1]) or '0') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], tostring(tonumber(ARGV[1]) + 1) .. ':' .. ARGV[2], 'PX', ARGV[3])
if KEYS[2] then push(2, 4) end
return 1`;

/**
 * Deletes every key but the last and, only when the first existed, appends to the last (an outbox)
 * in the same step: concurrent deletions record one event.
 */
export const DEL_RECORDING = `${PUSH}
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
for i = 2, #KEYS - 1 do redis.call('DEL', KEYS[i]) end
push(#KEYS, 1)
return 1`;

/**
 * ZADD (NX when ARGV[3] is 1, GT when it is 2: a later time kept), then the schedule lives at
 * least ARGV[4] ms (0: as it was).
 */
export const SCHEDULE_PUT = `
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], 'NX', ARGV[1], ARGV[2])
elseif ARGV[3] == '2' then redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2])
else redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) end
local keep = tonumber(ARGV[4])
if keep > 0 and redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return 1`;

/** ARGV: member, due by. Removes the member only if its time is `due by` or earlier. */
export const SCHEDULE_REMOVE_DUE = `
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if at and tonumber(at) <= tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0`;

export const COUNTER_ADD = `
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return value`;

/** ARGV: member, at, max count, min at, ttl. Answers how many members were dropped. */
export const LOG_ADD = `
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local dropped = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[4])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over > 0 then dropped = dropped + redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1) end
local ttl = tonumber(ARGV[5])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return dropped`;

export const LIST_PUSH = `${PUSH}
push(1, 1)
return 1`;

export const LIST_POP_IF_HEAD = `
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then redis.call('LPOP', KEYS[1]) return 1 end
return 0`;

export const DELETE_IF_EQUALS = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export const EXPIRE_IF_EQUALS = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

/**
 * A set of ids kept as a hash of empty values: Redis 7.0 gives a small hash its compact encoding
 * (listpack, about 60 bytes for one id) but a set of strings a hashtable (264 bytes) until 7.2. A
 * set data format 1 wrote becomes such a hash on first use (LUA_SET_AS_HASH), keeping its TTL.
 */
export const SET_ADD = `${LUA_SET_AS_HASH}
redis.call('HSET', KEYS[1], ARGV[1], '')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

export const SET_REMOVE = `${LUA_SET_AS_HASH}
return redis.call('HDEL', KEYS[1], ARGV[1])`;

export const SET_MEMBERS = `${LUA_SET_AS_HASH}
return redis.call('HKEYS', KEYS[1])`;

const NOW_MS = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)`;

/** ZADD scored by expiry, dropping the members expired (see Store.indexPut). */
export const INDEX_PUT = `${NOW_MS}
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

export const INDEX_COUNT = `${NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`;

/** The members left once the expired are dropped, only those that start with ARGV[1]. */
export const INDEX_MEMBERS = `${NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local prefix = ARGV[1]
local found = {}
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if string.sub(member, 1, #prefix) == prefix then found[#found + 1] = member end
end
return found`;
