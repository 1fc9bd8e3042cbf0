import { IDBFactory } from 'fake-indexeddb';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  indexedDbSessionVault,
  parseStoredSession,
  VAULT_DATABASE,
  VAULT_SESSION_KEY,
  VAULT_STORE,
} from './session-vault.ts';

const SESSION = { sessionToken: 'token-1', brokerUrl: 'https://broker.example.be' };

/** The extension origin's IndexedDB (fake-indexeddb), new for each test: a fresh profile. */
let indexedDb = new IDBFactory();

beforeEach(() => {
  indexedDb = new IDBFactory();
});

/** Writes `value` as the one record, as a damaged or foreign database could hold it. */
async function putRaw(value: unknown): Promise<void> {
  await indexedDbSessionVault(indexedDb).write(null);
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDb.open(VAULT_DATABASE, 1);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  await new Promise<void>((resolve, reject) => {
    const transaction = db.transaction(VAULT_STORE, 'readwrite');
    transaction.objectStore(VAULT_STORE).put(value, VAULT_SESSION_KEY);
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
  });
  db.close();
}

describe('the session vault (IndexedDB of the extension origin)', () => {
  it('reads undefined until it is first written: a profile that has not started this version', async () => {
    expect(await indexedDbSessionVault(indexedDb).read()).toBeUndefined();
  });

  it('reads back the session it wrote, and null once it is forgotten', async () => {
    const vault = indexedDbSessionVault(indexedDb);

    await vault.write(SESSION);
    expect(await vault.read()).toEqual(SESSION);

    await vault.write(null);
    expect(await vault.read()).toBeNull();
  });

  it('keeps it across a restart (a new connection to the same database)', async () => {
    await indexedDbSessionVault(indexedDb).write(SESSION);

    expect(await indexedDbSessionVault(indexedDb).read()).toEqual(SESSION);
  });

  it('opens again after the browser closed its connection', async () => {
    const vault = indexedDbSessionVault(indexedDb);
    await vault.write(SESSION);
    // Another context deletes the database: the vault's connection is asked to close.
    await new Promise<void>((resolve, reject) => {
      const request = indexedDb.deleteDatabase(VAULT_DATABASE);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });

    expect(await vault.read()).toBeUndefined();
    await vault.write(SESSION);
    expect(await vault.read()).toEqual(SESSION);
  });

  it.each<[string, unknown]>([
    ['a string', 'token-1'],
    ['a session without a broker', { sessionToken: 'token-1' }],
    ['an empty token', { sessionToken: '', brokerUrl: 'https://broker.example.be' }],
  ])('reads %s as no session', async (_name, value) => {
    await putRaw(value);

    expect(await indexedDbSessionVault(indexedDb).read()).toBeNull();
  });

  it('keeps only the two fields of a session', () => {
    expect(parseStoredSession({ ...SESSION, extra: 'x' })).toEqual(SESSION);
  });
});
