import { LOCALES, type Locale } from '@baton/shared';
import { storage } from 'wxt/utils/storage';
import { parseBrokerUrl } from '../broker-url.ts';
import { serialisedStore, type SerialisedStore } from './serialised.ts';

/**
 * What survives a browser restart, in `storage.local`, as one versioned item.
 *
 * v1 (the first cut) kept a flat `{ brokerUrl?, locale?, sessionToken? }`: nothing said which
 * broker had issued the token, so changing the broker URL would have sent it to the new one.
 * v2 binds the token to the broker URL that issued it; the extension only ever sends it there.
 * v3 remembers the language the user last signed in with (`lastSignInLocale`), offered first the
 * next time, before the options page's default and the browser's languages.
 */
export const STATE_KEY = 'local:state';
export const STATE_VERSION = 3;

export interface Settings {
  /** null: the broker the extension was built for. */
  readonly brokerUrl: string | null;
  /** Default language of the authorization pages; null: from the browser's languages. */
  readonly locale: Locale | null;
}

export interface StoredSession {
  readonly sessionToken: string;
  /** The broker that issued the token, normalised; the token is sent nowhere else. */
  readonly brokerUrl: string;
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

export type PersistedStateItem = ReturnType<typeof definePersistedStateItem>;

/**
 * Defines the item (which starts its migration at once). The background defines it once;
 * tests define it after seeding storage with an older version.
 */
export function definePersistedStateItem(buildBrokerUrl: string) {
  return storage.defineItem<PersistedState>(STATE_KEY, {
    fallback: INITIAL_STATE,
    version: STATE_VERSION,
    migrations: {
      2: (v1: unknown) => migrateV1toV2(v1, buildBrokerUrl),
      3: (v2: unknown) => migrateV2toV3(v2),
    },
  });
}

/**
 * Serialised read-modify-write over the item: the background is its only writer, and the flow,
 * the refresh and the options page may all want to change it at once.
 */
export type StateStore = SerialisedStore<PersistedState>;

export function createStateStore(item: PersistedStateItem): StateStore {
  return serialisedStore(
    async () => parsePersistedState(await item.getValue()),
    (state) => item.setValue(state),
  );
}
