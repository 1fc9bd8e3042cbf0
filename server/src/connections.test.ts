import { describe, expect, it } from 'vitest';
import { createConnectionRepository, type ConnectionRecord } from './connections.ts';
import { createSealer, DecryptError, parseKeyring } from './crypto.ts';
import { keys } from './keys.ts';
import { createMemoryStore } from './store/memory.ts';

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
