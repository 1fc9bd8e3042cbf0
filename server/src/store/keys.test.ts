import { describe, expect, it } from 'vitest';
import { eventShard, EVENT_SHARDS, keys, parseSessionKey } from './keys.ts';

const SID = 'Qm9uam91ciBsZXMgYW1pcywgYm9uam91ciB0b3VzIQ0';

describe('parseSessionKey', () => {
  it('reads back the session keys keys.ts writes', () => {
    expect(parseSessionKey(keys.session(SID))).toEqual({ kind: 'session', sid: SID });
    expect(parseSessionKey(keys.outbox(SID))).toEqual({ kind: 'outbox', sid: SID });
    expect(parseSessionKey(keys.connection(SID, 'c:1'))).toEqual({
      kind: 'connection',
      sid: SID,
      id: 'c:1',
    });
  });

  it.each([
    keys.connectionIds(SID),
    keys.refreshLock(SID, 'c1'),
    keys.outboxLease(SID),
    keys.eventsDue(3),
    keys.handoff('h'),
    'baton:{a}b}:session',
  ])('is null for %s', (key) => {
    expect(parseSessionKey(key)).toBeNull();
  });
});

describe('eventShard', () => {
  it('spreads sessions over every shard, the same shard for a session each time', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const shards = new Set([...alphabet].map((first) => eventShard(`${first}rest`)));
    expect(shards.size).toBe(EVENT_SHARDS);
    expect(eventShard(SID)).toBe(eventShard(SID));
  });
});
