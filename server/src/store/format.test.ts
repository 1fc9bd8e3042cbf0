import { describe, expect, it } from 'vitest';
import { DATA_FORMAT, DataFormatError, upgradeFormat } from './format.ts';
import { eventShard, indexMember, indexShard, keys } from './keys.ts';
import { createMemoryStore } from './memory.ts';

const T0 = Date.UTC(2026, 10, 1, 9, 0);
const SID = 'Qm9uam91ciBsZXMgYW1pcywgYm9uam91ciB0b3VzIQ0';
const DAY = 24 * 3600 * 1000;

/** A store as release 0.1 left it: one index, one schedule, one list of dead letters. */
async function formatOne() {
  const now = () => T0;
  const store = createMemoryStore(now);
  await store.indexPut(keys.formerConnectionIndex('connected'), `${SID}:c1`, DAY);
  await store.indexPut(keys.formerConnectionIndex('disconnected'), `${SID}:c2`, DAY);
  await store.schedulePut(keys.formerEventsDue, SID, T0 + 5000);
  const letter = JSON.stringify({
    id: 'msg_1',
    session_ref: 'ses_abc',
    dead_at: '2026-11-01T08:00:00Z',
  });
  await store.listPush(keys.formerDeadLetters, letter, 30 * DAY);
  return { store, now, letter };
}

describe('upgradeFormat', () => {
  it('moves format 1 into the shards of format 2, and says the store is format 2', async () => {
    const { store, now, letter } = await formatOne();
    const upgrade = await upgradeFormat(store, now);
    expect(upgrade).toMatchObject({
      from: 1,
      to: DATA_FORMAT,
      moved: { indexed: 2, scheduled: 1, deadLetters: 1 },
      leftToAnother: false,
    });
    expect(await store.get(keys.dataFormat)).toBe(String(DATA_FORMAT));
    const shard = indexShard(SID);
    expect(await store.indexCount(keys.connectionIndex('connected', shard))).toBe(1);
    expect(await store.indexCount(keys.connectionIndex('disconnected', shard))).toBe(1);
    expect(await store.sortedTake(keys.connectionIndex('connected', shard), 9)).toEqual([
      { member: indexMember(SID, 'c1'), score: T0 + DAY },
    ]);
    expect(await store.scheduleDue(keys.eventsDue(eventShard(SID)), T0 + 5000, 9)).toEqual([SID]);
    expect(await store.logNewest(keys.deadLetters(eventShard('abc')), 9)).toEqual([letter]);
    // Nothing of format 1 is left.
    expect(await store.indexCount(keys.formerConnectionIndex('connected'))).toBe(0);
    expect(await store.scheduleSize(keys.formerEventsDue)).toBe(0);
    expect(await store.listLength(keys.formerDeadLetters)).toBe(0);
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
});
