import { describe, expect, it } from 'vitest';
import { createConnectionRepository, type ConnectionRecord } from './records.ts';
import { createSealer, DecryptError, parseKeyring } from '../base/crypto.ts';
import { keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';

const A = `a:${Buffer.alloc(32, 1).toString('base64')}`;
const B = `b:${Buffer.alloc(32, 2).toString('base64')}`;
const record: ConnectionRecord = {
  id: 'c1',
  apiUrl: 'https://eu.api.example.test/licenses/1',
  status: 'connected',
  connectedAt: 1_000,
  tokens: { accessToken: 'at', refreshToken: 'rt', expiresAt: 2_000 },
};
const repository = (store: ReturnType<typeof createMemoryStore>, keyring: string) =>
  createConnectionRepository(store, createSealer(parseKeyring(keyring)));
const kid = async (store: ReturnType<typeof createMemoryStore>) =>
  (await store.getVersioned(keys.connection('sid', 'c1')))?.value.split('.')[0];

describe('connection records across an encryption key rotation', () => {
  it('reads a record sealed under the old key, and seals it again under the active one', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    expect(await kid(store)).toBe('a');

    const rotated = repository(store, `${B},${A}`);
    expect(await rotated.load('sid', 'c1')).toEqual({ record, version: 2 });
    expect(await kid(store)).toBe('b');
    // Read again: already under the active key, nothing more is written.
    expect(await rotated.load('sid', 'c1')).toEqual({ record, version: 2 });
  });

  it('refuses, and writes nothing, when the old key is gone', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    await expect(repository(store, B).load('sid', 'c1')).rejects.toBeInstanceOf(DecryptError);
    expect(await kid(store)).toBe('a');
  });
});

describe('records opened again', () => {
  const counting = (keyring: string) => {
    const sealer = createSealer(parseKeyring(keyring));
    let opens = 0;
    const open: typeof sealer.open = (blob, aad) => {
      opens++;
      return sealer.open(blob, aad);
    };
    return { sealer: { ...sealer, open }, opens: () => opens };
  };

  it('opens an unchanged sealed blob once, and hands out a record nobody can change', async () => {
    const store = createMemoryStore();
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(store, sealer);
    await repo.save('sid', record, 0);

    const first = await repo.load('sid', 'c1');
    const second = await repo.load('sid', 'c1');
    expect(opens()).toBe(1);
    expect(second).toEqual({ record, version: 1 });
    // The identity rule: the caches keyed by record object (loader, proxy) depend on it.
    expect(second!.record).toBe(first!.record);
    expect(Object.isFrozen(first!.record) && Object.isFrozen(first!.record.tokens)).toBe(true);
  });

  it('opens the new blob once the record was written again', async () => {
    const store = createMemoryStore();
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(store, sealer);
    await repo.save('sid', record, 0);
    await repo.load('sid', 'c1');

    const rotated = {
      ...record,
      tokens: { accessToken: 'at2', refreshToken: 'rt2', expiresAt: 3_000 },
    };
    const before = (await repo.load('sid', 'c1'))!.record;
    await repository(store, A).save('sid', rotated, 1);
    const after = await repo.load('sid', 'c1');
    expect(after).toEqual({ record: rotated, version: 2 });
    expect(after!.record).not.toBe(before);
    expect(opens()).toBe(2);
  });

  it('opens an answer read afresh every time, and keeps nothing for it', async () => {
    const store = createMemoryStore();
    await repository(store, A).save('sid', record, 0);
    // A store that keeps no answer (Redis with REDIS_CACHE_ENTRIES=0, or an untracked read).
    const fresh: typeof store = {
      ...store,
      getVersioned: async (key, options) => {
        const stored = await store.getVersioned(key, options);
        return stored && { ...stored };
      },
    };
    const { sealer, opens } = counting(A);
    const repo = createConnectionRepository(fresh, sealer);
    const first = await repo.load('sid', 'c1');
    const second = await repo.load('sid', 'c1');
    expect(opens()).toBe(2);
    expect(second).toEqual(first);
    expect(second!.record).not.toBe(first!.record);
  });
});
