import { IDBFactory } from 'fake-indexeddb';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createStateStore,
  definePersistedStateItem,
  INITIAL_STATE,
  migrateV1toV2,
  migrateV2toV3,
  parsePersistedState,
  STATE_VERSION,
  type PersistedState,
} from './persisted.ts';
import { indexedDbSessionVault, type SessionVault, type StoredSession } from './session-vault.ts';

const BUILD = 'http://127.0.0.1:8787';

/** The extension origin's IndexedDB, new for each test (a fresh profile). */
let indexedDb = new IDBFactory();
const vault = () => indexedDbSessionVault(indexedDb);

/**
 * Seeds `local:state` as an older build left it, then starts as the background does: defines the
 * item (which migrates) and reads the state store once.
 */
async function openWith(stored: unknown, meta?: { v: number }) {
  await fakeBrowser.storage.local.set({
    state: stored,
    ...(meta !== undefined && { state$: meta }),
  });
  const item = definePersistedStateItem(BUILD, vault());
  const store = createStateStore(item, vault());
  const value = await store.read();
  const raw = await fakeBrowser.storage.local.get(['state', 'state$']);
  return { item, store, value, raw, kept: await vault().read() };
}

const local = ({ settings, lastSignInLocale }: PersistedState) => ({ settings, lastSignInLocale });

describe('the persisted state (local:state, and the session in the vault)', () => {
  beforeEach(() => {
    fakeBrowser.reset();
    indexedDb = new IDBFactory();
  });

  it('is at version 4', () => {
    expect(STATE_VERSION).toBe(4);
  });

  describe('on a fresh install', () => {
    it('reads the initial state, marks the vault as holding no session, and the first write records version 4', async () => {
      const store = createStateStore(definePersistedStateItem(BUILD, vault()), vault());
      expect(await store.read()).toEqual(INITIAL_STATE);
      expect(await vault().read()).toBeNull();

      await store.update((s) => ({ ...s, settings: { ...s.settings, locale: 'fr' } }));

      expect(await fakeBrowser.storage.local.get(['state', 'state$'])).toEqual({
        state: { settings: { brokerUrl: null, locale: 'fr' }, lastSignInLocale: null },
        state$: { v: 4 },
      });
    });

    it('keeps a new session in the vault only', async () => {
      const store = createStateStore(definePersistedStateItem(BUILD, vault()), vault());

      await store.update((s) => ({ ...s, session: { sessionToken: 't', brokerUrl: BUILD } }));

      expect(await vault().read()).toEqual({ sessionToken: 't', brokerUrl: BUILD });
      expect(await fakeBrowser.storage.local.get(null)).toEqual({});
    });
  });

  describe('migrating v1 (flat, token not bound to a broker) to v2, then v3, then v4', () => {
    it('binds the token to the broker that was configured then, and moves it to the vault', async () => {
      const { value, raw, kept } = await openWith(
        { brokerUrl: 'https://broker.example.be/', locale: 'fr', sessionToken: 'tok' },
        { v: 1 },
      );

      expect(value).toEqual({
        settings: { brokerUrl: 'https://broker.example.be', locale: 'fr' },
        session: { sessionToken: 'tok', brokerUrl: 'https://broker.example.be' },
        lastSignInLocale: null,
      });
      expect(kept).toEqual(value.session);
      expect(raw['state$']).toEqual({ v: 4 });
      expect(raw['state']).toEqual(local(value));
    });

    it('treats a value without version metadata as v1', async () => {
      const { value, raw } = await openWith({ sessionToken: 'tok' });

      expect(value).toEqual({
        settings: { brokerUrl: null, locale: null },
        session: { sessionToken: 'tok', brokerUrl: BUILD },
        lastSignInLocale: null,
      });
      expect(raw['state$']).toEqual({ v: 4 });
      expect(JSON.stringify(raw)).not.toContain('tok');
    });

    it('drops what v1 could hold but v2 does not accept', async () => {
      const { value } = await openWith(
        { brokerUrl: 'http://insecure.example', locale: 'de', sessionToken: '' },
        { v: 1 },
      );

      expect(value).toEqual(INITIAL_STATE);
    });

    it.each([
      ['a string', 'garbage'],
      ['an array', ['a']],
      ['numbers', { brokerUrl: 1, locale: 2, sessionToken: 3 }],
    ])('turns %s into the initial state', (_name, v1) => {
      expect(migrateV2toV3(migrateV1toV2(v1, BUILD))).toEqual(INITIAL_STATE);
    });
  });

  describe('migrating v2 to v3 (the language of the last sign-in)', () => {
    it('keeps settings and session, and remembers no sign-in yet', async () => {
      const v2 = {
        settings: { brokerUrl: 'https://b.example', locale: 'nl' },
        session: { sessionToken: 'x', brokerUrl: 'https://b.example' },
      };

      const { value, raw, kept } = await openWith(v2, { v: 2 });

      expect(value).toEqual({ ...v2, lastSignInLocale: null });
      expect(kept).toEqual(v2.session);
      expect(raw['state$']).toEqual({ v: 4 });
      expect(raw['state']).toEqual(local(value));
    });

    it('reads a malformed v2 value defensively', () => {
      expect(migrateV2toV3({ settings: 'x', session: { sessionToken: 't' } })).toEqual(
        INITIAL_STATE,
      );
    });
  });

  describe('migrating v3 to v4 (the token leaves storage.local for the vault)', () => {
    const session: StoredSession = { sessionToken: 'x', brokerUrl: 'https://b.example' };
    const v3 = {
      settings: { brokerUrl: 'https://b.example', locale: 'nl' },
      session,
      lastSignInLocale: 'fr',
    };

    it('writes the token into the vault, then storage.local without it', async () => {
      const { value, raw, kept } = await openWith(v3, { v: 3 });

      expect(value).toEqual(v3);
      expect(kept).toEqual(session);
      expect(raw).toEqual({ state: local(v3 as PersistedState), state$: { v: 4 } });
    });

    it('loses nothing when the worker stops after writing the vault: the next start finishes', async () => {
      // The vault written, storage.local not yet: as a worker stopped between the two leaves it.
      await vault().write(session);

      const { value, raw } = await openWith(v3, { v: 3 });

      expect(value).toEqual(v3);
      expect(raw).toEqual({ state: local(v3 as PersistedState), state$: { v: 4 } });
    });

    it("prefers the vault's session to a token in storage.local", async () => {
      const newer = { sessionToken: 'newer', brokerUrl: 'https://b.example' };
      await vault().write(newer);

      const { value, raw } = await openWith(v3, { v: 3 });

      expect(value.session).toEqual(newer);
      expect(JSON.stringify(raw)).not.toContain('"x"');
    });

    it('never adopts a token found in storage.local once the vault has been written', async () => {
      // Signed out (or a fresh install that has started once); then a content script writes the
      // old key and shape with a token of its own.
      await vault().write(null);

      const { value, raw } = await openWith(v3, { v: 3 });

      expect(value.session).toBeNull();
      expect(await vault().read()).toBeNull();
      expect(JSON.stringify(raw)).not.toContain('"x"');
    });

    it('a fresh install started once ignores a token planted afterwards', async () => {
      await createStateStore(definePersistedStateItem(BUILD, vault()), vault()).read();

      const { value, kept } = await openWith(v3, { v: 3 });

      expect(value.session).toBeNull();
      expect(kept).toBeNull();
    });

    it('a token written into a v4 value is ignored, and removed at the next start', async () => {
      await vault().write(null);

      const { value, raw } = await openWith({ ...v3, session }, { v: 4 });

      expect(value).toEqual({ ...v3, session: null });
      expect(raw).toEqual({ state: local(v3 as PersistedState), state$: { v: 4 } });
    });
  });

  it('leaves a v4 value as it is', async () => {
    const v4 = {
      settings: { brokerUrl: 'https://b.example', locale: 'nl' },
      lastSignInLocale: 'fr',
    };

    const { value, raw } = await openWith(v4, { v: 4 });

    expect(value).toEqual({ ...v4, session: null });
    expect(raw).toEqual({ state: v4, state$: { v: 4 } });
  });

  it('a value from a newer version (downgrade) is read defensively, not trusted', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { store } = await openWith(
      { settings: { brokerUrl: 42 }, session: 'nope', extra: true },
      { v: 5 },
    );

    expect(await store.read()).toEqual(INITIAL_STATE);
    expect(String(logged.mock.calls[0]?.[1])).toContain('Version downgrade detected');
    logged.mockRestore();
  });

  describe('parsePersistedState', () => {
    it.each([
      ['null', null, INITIAL_STATE],
      ['an empty object', {}, INITIAL_STATE],
      [
        'a session without a broker',
        { settings: { brokerUrl: null, locale: 'nl' }, session: { sessionToken: 't' } },
        { settings: { brokerUrl: null, locale: 'nl' }, session: null, lastSignInLocale: null },
      ],
      [
        'a last sign-in language the pages do not speak',
        { settings: { brokerUrl: null, locale: null }, session: null, lastSignInLocale: 'de' },
        INITIAL_STATE,
      ],
      [
        'an invalid stored broker URL',
        { settings: { brokerUrl: 'ftp://x', locale: null }, session: null },
        INITIAL_STATE,
      ],
    ])('reads %s safely', (_name, stored, expected) => {
      expect(parsePersistedState(stored)).toEqual(expected);
    });
  });

  it('serialises concurrent updates', async () => {
    const store = createStateStore(definePersistedStateItem(BUILD, vault()), vault());

    await Promise.all([
      store.update((s) => ({ ...s, settings: { ...s.settings, locale: 'fr' } })),
      store.update((s) => ({ ...s, session: { sessionToken: 't', brokerUrl: BUILD } })),
    ]);

    expect(await store.read()).toEqual({
      settings: { brokerUrl: null, locale: 'fr' },
      session: { sessionToken: 't', brokerUrl: BUILD },
      lastSignInLocale: null,
    });
  });

  it('writes only the part that changed', async () => {
    const writes: string[] = [];
    const counted = (inner: SessionVault): SessionVault => ({
      read: () => inner.read(),
      write: async (session) => {
        writes.push('vault');
        await inner.write(session);
      },
    });
    const store = createStateStore(definePersistedStateItem(BUILD, vault()), counted(vault()));
    await store.read();
    writes.length = 0;
    const setLocal = vi.spyOn(fakeBrowser.storage.local, 'set');

    await store.update((s) => ({ ...s, session: { sessionToken: 't', brokerUrl: BUILD } }));
    await store.update((s) => ({ ...s, session: null }));
    expect({ vault: writes.length, local: setLocal.mock.calls.length }).toEqual({
      vault: 2,
      local: 0,
    });

    await store.update((s) => ({ ...s, lastSignInLocale: 'nl' }));
    expect(writes).toHaveLength(2);
    expect(setLocal.mock.calls.length).toBeGreaterThan(0);
    setLocal.mockRestore();
  });
});
