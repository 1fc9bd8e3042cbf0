import { LOCALES, type Locale } from '@baton/shared';
import { storage } from 'wxt/utils/storage';
import { parseBrokerUrl } from '../broker-url.ts';
import { serialisedStore, type SerialisedStore } from './serialised.ts';
import type { SessionVault, StoredSession } from './session-vault.ts';

export type { StoredSession } from './session-vault.ts';

/**
 * What survives a browser restart: the settings and the last sign-in language in `storage.local`,
 * as one versioned item, and the session token in the session vault (session-vault.ts: the
 * extension origin's IndexedDB, which no content script can open). The background reads and
 * updates the two as one `PersistedState`.
 *
 * v1 (the first cut) kept a flat `{ brokerUrl?, locale?, sessionToken? }`: nothing said which
 * broker had issued the token, so changing the broker URL would have sent it to the new one.
 * v2 binds the token to the broker URL that issued it; the extension only ever sends it there.
 * v3 remembers the language the user last signed in with (`lastSignInLocale`), offered first the
 * next time, before the options page's default and the browser's languages.
 * v4 no longer keeps the token: content scripts can read and write `storage.local`. Migrating
 * writes the token into the vault first and only then the item without it, so that a worker
 * stopped in between loses nothing (the next start migrates again, and the vault's copy wins).
 */
export const STATE_KEY = 'local:state';
export const STATE_VERSION = 4;

export interface Settings {
  /** null: the broker the extension was built for. */
  readonly brokerUrl: string | null;
  /** Default language of the authorization pages; null: from the browser's languages. */
  readonly locale: Locale | null;
}

export interface PersistedState {
  readonly settings: Settings;
  readonly session: StoredSession | null;
  /**
   * The language of the sign-in pages the user last chose in the popup and signed in with; null:
   * none since the options page's default was last set.
   */
  readonly lastSignInLocale: Locale | null;
}

/** v2's shape: v3 added `lastSignInLocale`. */
export type PersistedStateV2 = Omit<PersistedState, 'lastSignInLocale'>;

/** v4's shape, what `storage.local` holds: v3 without the session, which is in the vault. */
export type LocalState = Omit<PersistedState, 'session'>;

export const INITIAL_STATE: PersistedState = {
  settings: { brokerUrl: null, locale: null },
  session: null,
  lastSignInLocale: null,
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/**
 * Reads a stored value defensively: a malformed part falls back to its initial value (a bad
 * session is dropped, bad settings become the defaults), never an exception.
 */
export function parsePersistedState(value: unknown): PersistedState {
  if (!isRecord(value)) return INITIAL_STATE;
  const settings = isRecord(value['settings']) ? value['settings'] : {};
  const brokerUrl = settings['brokerUrl'];
  const session = isRecord(value['session']) ? value['session'] : null;
  return {
    settings: {
      brokerUrl: isNonEmptyString(brokerUrl) && parseBrokerUrl(brokerUrl).ok ? brokerUrl : null,
      locale: isLocale(settings['locale']) ? settings['locale'] : null,
    },
    session:
      session !== null &&
      isNonEmptyString(session['sessionToken']) &&
      isNonEmptyString(session['brokerUrl'])
        ? { sessionToken: session['sessionToken'], brokerUrl: session['brokerUrl'] }
        : null,
    lastSignInLocale: isLocale(value['lastSignInLocale']) ? value['lastSignInLocale'] : null,
  };
}

/**
 * v1 → v2. A v1 token can only have come from the broker that was configured then (the
 * stored URL, or else the build's), so that is the broker it gets bound to.
 */
export function migrateV1toV2(value: unknown, buildBrokerUrl: string): PersistedStateV2 {
  const v1 = isRecord(value) ? value : {};
  const stored = typeof v1['brokerUrl'] === 'string' ? parseBrokerUrl(v1['brokerUrl']) : null;
  const brokerUrl = stored?.ok === true ? stored.url : null;
  const token = v1['sessionToken'];
  return {
    settings: { brokerUrl, locale: isLocale(v1['locale']) ? v1['locale'] : null },
    session:
      typeof token === 'string' && token !== ''
        ? { sessionToken: token, brokerUrl: brokerUrl ?? buildBrokerUrl }
        : null,
  };
}

/**
 * v2 → v3. No sign-in has been remembered yet: the options page's default (or the browser's
 * languages) stays what is offered first until the next sign-in.
 */
export function migrateV2toV3(value: unknown): PersistedState {
  return { ...parsePersistedState(value), lastSignInLocale: null };
}

/**
 * v3 → v4: the session moves to the vault. It is written there first, and only when the vault
 * was never written: once it has been, the vault is the truth, and a token found in storage.local
 * (a worker stopped after writing the vault, or a content script's write of the old shape) is
 * dropped, never adopted.
 */
export async function migrateV3toV4(value: unknown, vault: SessionVault): Promise<LocalState> {
  const v3 = parsePersistedState(value);
  if ((await vault.read()) === undefined) await vault.write(v3.session);
  return localPart(v3);
}

/** What of the state storage.local keeps. */
const localPart = ({ settings, lastSignInLocale }: LocalState): LocalState => ({
  settings,
  lastSignInLocale,
});

/** The v4 value read defensively; whatever else it holds (a `session`) is ignored. */
export const parseLocalState = (value: unknown): LocalState =>
  localPart(parsePersistedState(value));

export type PersistedStateItem = ReturnType<typeof definePersistedStateItem>;

/**
 * Defines the item (which starts its migration at once). The background defines it once;
 * tests define it after seeding storage with an older version.
 */
export function definePersistedStateItem(buildBrokerUrl: string, vault: SessionVault) {
  return storage.defineItem<LocalState>(STATE_KEY, {
    fallback: { settings: INITIAL_STATE.settings, lastSignInLocale: null },
    version: STATE_VERSION,
    migrations: {
      2: (v1: unknown) => migrateV1toV2(v1, buildBrokerUrl),
      3: (v2: unknown) => migrateV2toV3(v2),
      4: (v3: unknown) => migrateV3toV4(v3, vault),
    },
  });
}

/**
 * Once the item's migration is done: a vault never written gets what storage.local holds (no
 * session, unless the migration could not run), and from then on no token found in storage.local
 * is adopted; one left there (a content script's write) is removed from it, vault first.
 */
async function openState(item: PersistedStateItem, vault: SessionVault): Promise<void> {
  const stored: unknown = await item.getValue();
  if ((await vault.read()) === undefined) await vault.write(parsePersistedState(stored).session);
  if (
    typeof stored === 'object' &&
    stored !== null &&
    ('session' in stored || 'sessionToken' in stored)
  )
    await item.setValue(parseLocalState(stored));
}

/**
 * Serialised read-modify-write over the item and the vault, as one state: the background is
 * their only writer, and the flow, the refresh and the options page may all want to change it at
 * once. A write touches only the part that changed: the vault first, then storage.local.
 */
export type StateStore = SerialisedStore<PersistedState>;

export function createStateStore(item: PersistedStateItem, vault: SessionVault): StateStore {
  let opened: Promise<void> | undefined;
  const open = () =>
    (opened ??= openState(item, vault).catch((error: unknown) => {
      opened = undefined;
      throw error;
    }));
  return serialisedStore(
    async () => {
      await open();
      const [local, session] = await Promise.all([item.getValue(), vault.read()]);
      return { ...parseLocalState(local), session: session ?? null };
    },
    async (next, previous) => {
      if (JSON.stringify(next.session) !== JSON.stringify(previous.session))
        await vault.write(next.session);
      const local = localPart(next);
      if (JSON.stringify(local) !== JSON.stringify(localPart(previous))) await item.setValue(local);
    },
  );
}
