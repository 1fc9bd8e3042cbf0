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
} from './persisted.ts';

const BUILD = 'http://127.0.0.1:8787';

/** Seeds `local:state` as an older build left it, then defines the item (which migrates). */
async function openWith(stored: unknown, meta?: { v: number }) {
  await fakeBrowser.storage.local.set({
    state: stored,
    ...(meta !== undefined && { state$: meta }),
  });
  const item = definePersistedStateItem(BUILD);
  const value = await item.getValue();
  const raw = await fakeBrowser.storage.local.get(['state', 'state$']);
  return { item, value, raw };
}

describe('the persisted state item (local:state)', () => {
  beforeEach(() => {
    fakeBrowser.reset();
  });

  it('is at version 3', () => {
    expect(STATE_VERSION).toBe(3);
  });

  describe('on a fresh install', () => {
    it('reads the initial state, and the first write records version 3', async () => {
      const item = definePersistedStateItem(BUILD);
      expect(await item.getValue()).toEqual(INITIAL_STATE);

      await createStateStore(item).update((s) => ({
        ...s,
        session: { sessionToken: 't', brokerUrl: BUILD },
      }));

      expect(await fakeBrowser.storage.local.get('state$')).toEqual({ state$: { v: 3 } });
    });
  });

  describe('migrating v1 (flat, token not bound to a broker) to v2, then v3', () => {
    it('binds the token to the broker that was configured then', async () => {
      const { value, raw } = await openWith(
        { brokerUrl: 'https://broker.example.be/', locale: 'fr', sessionToken: 'tok' },
        { v: 1 },
      );

      expect(value).toEqual({
        settings: { brokerUrl: 'https://broker.example.be', locale: 'fr' },
        session: { sessionToken: 'tok', brokerUrl: 'https://broker.example.be' },
        lastSignInLocale: null,
      });
      expect(raw['state$']).toEqual({ v: 3 });
      expect(raw['state']).toEqual(value);
    });

    it('treats a value without version metadata as v1', async () => {
      const { value, raw } = await openWith({ sessionToken: 'tok' });

      expect(value).toEqual({
        settings: { brokerUrl: null, locale: null },
        session: { sessionToken: 'tok', brokerUrl: BUILD },
        lastSignInLocale: null,
      });
      expect(raw['state$']).toEqual({ v: 3 });
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

      const { value, raw } = await openWith(v2, { v: 2 });

      expect(value).toEqual({ ...v2, lastSignInLocale: null });
      expect(raw['state$']).toEqual({ v: 3 });
      expect(raw['state']).toEqual(value);
    });

    it('reads a malformed v2 value defensively', () => {
      expect(migrateV2toV3({ settings: 'x', session: { sessionToken: 't' } })).toEqual(
        INITIAL_STATE,
      );
    });
  });

  it('leaves a v3 value as it is', async () => {
    const v3 = {
      settings: { brokerUrl: 'https://b.example', locale: 'nl' },
      session: { sessionToken: 'x', brokerUrl: 'https://b.example' },
      lastSignInLocale: 'fr',
    };

    const { value, raw } = await openWith(v3, { v: 3 });

    expect(value).toEqual(v3);
    expect(raw['state$']).toEqual({ v: 3 });
  });

  it('a value from a newer version (downgrade) is read defensively, not trusted', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const store = createStateStore(
      (await openWith({ settings: { brokerUrl: 42 }, session: 'nope', extra: true }, { v: 4 }))
        .item,
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
    const store = createStateStore(definePersistedStateItem(BUILD));

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
});
