import { IDBFactory } from 'fake-indexeddb';
import { readFileSync } from 'node:fs';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { hostPermissionFor } from '../broker-url.ts';
import type { MessageKey, Messages } from '../background/badge.ts';
import { createBackground, type Background } from '../background/service.ts';
import { STATUS_CHECK_ALARM } from '../background/status-check.ts';
import { createStateStore, definePersistedStateItem, type StateStore } from '../state/persisted.ts';
import { lastViewCache, lastViewItem } from '../state/last-view.ts';
import { indexedDbSessionVault, type SessionVault } from '../state/session-vault.ts';
import { createViewStore, viewItem, type View } from '../state/view.ts';
import { FakeBroker, type FakeLicense } from './fake-broker.ts';

import { LICENSE_A, LICENSE_B } from './fixtures.ts';

export { LICENSE_A, LICENSE_B };

export const BROKER = 'http://127.0.0.1:8787';
export const REDIRECT_URL = 'https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/';
export const T0 = Date.UTC(2025, 0, 15, 9, 30);

type LaunchBehaviour = (authUrl: URL) => Promise<string | undefined> | string | undefined;

/** `identity` as the background sees it, scripted per test. */
export class FakeIdentity {
  readonly launched: URL[] = [];
  private behaviour: LaunchBehaviour = () => {
    throw new Error('FakeIdentity: no behaviour set for launchWebAuthFlow');
  };

  readonly api = {
    getRedirectURL: () => REDIRECT_URL,
    launchWebAuthFlow: async (url: string) => {
      const parsed = new URL(url);
      this.launched.push(parsed);
      return this.behaviour(parsed);
    },
  };

  /** The user signs in and picks `license`: the broker redirects with a handoff. */
  grant(broker: FakeBroker, license: FakeLicense): void {
    this.behaviour = (url) =>
      `${REDIRECT_URL}?handoff=${broker.issueHandoff(license, url.searchParams.get('code_challenge') ?? '')}`;
  }

  /** The flow ends at the redirect URL with `?error=`. */
  redirectError(error: string): void {
    this.behaviour = () => `${REDIRECT_URL}?error=${encodeURIComponent(error)}`;
  }

  endAt(finalUrl: string | undefined): void {
    this.behaviour = () => finalUrl;
  }

  reject(message: string): void {
    this.behaviour = () => Promise.reject(new Error(message));
  }

  /** Keeps the auth window "open" until the test calls `finish`. */
  hold(): { opened: Promise<void>; finish: (behaviour: LaunchBehaviour) => void } {
    let finish!: (behaviour: LaunchBehaviour) => void;
    let opened!: () => void;
    const chosen = new Promise<LaunchBehaviour>((resolve) => (finish = resolve));
    const openedPromise = new Promise<void>((resolve) => (opened = resolve));
    this.behaviour = async (url) => {
      opened();
      return (await chosen)(url);
    };
    return { opened: openedPromise, finish };
  }
}

export interface Harness {
  readonly background: Background;
  readonly broker: FakeBroker;
  readonly identity: FakeIdentity;
  readonly state: StateStore;
  readonly granted: Set<string>;
  readonly events: [string, Record<string, unknown> | undefined][];
  readonly clock: { now: number };
  /** The organisation's policy (storage.managed): set it, then `changed()` as the browser would. */
  readonly policy: { value: unknown; changed(): Promise<void> };
  view(): Promise<View>;
  send: Background['handlers'];
  /** The integrator's API (api.ts), as the background answers it. */
  api: Background['api'];
  /** The storage writes since start-up, and the worker's death after some of them. */
  readonly writes: Writes;
  /** The toolbar icon as the user sees it (fakeBrowser.action). */
  badge(): Promise<{ text: string; title: string; color: string }>;
  /** The status check's alarm as the browser holds it (fakeBrowser.alarms), if any. */
  checkAlarm(): Promise<{ scheduledTime: number; periodInMinutes?: number } | undefined>;
  /**
   * The browser fires the status check's alarm: the clock moves to its time, the background's
   * listener runs, and this resolves once the check is done. Throws when no alarm is set.
   */
  fireCheck(): Promise<void>;
}

/** The extension's messages in `locale`, as `i18n.getMessage` gives them (placeholders filled). */
export function messagesIn(locale: 'en' | 'fr' | 'nl'): Messages {
  const catalog = JSON.parse(
    readFileSync(new URL(`../../public/_locales/${locale}/messages.json`, import.meta.url), 'utf8'),
  ) as Record<
    MessageKey,
    { message: string; placeholders?: Record<string, { content: string }> } | undefined
  >;
  return (key, ...substitutions) => {
    const entry = catalog[key];
    if (entry === undefined) return '';
    return entry.message.replace(/\$([A-Za-z_]+)\$/g, (_all, name: string) => {
      const content = entry.placeholders?.[name.toLowerCase()]?.content ?? '';
      return content.replace(/\$(\d)/g, (_d, n: string) => substitutions[Number(n) - 1] ?? '');
    });
  };
}

/**
 * Every write to the extension's storage (each `set`, `remove` or `clear` of a storage area, each
 * write of the session vault), in order, and a way to make the worker die: after `dieAfter(n)`,
 * the n writes that follow happen and every later one throws, as if the worker had been stopped
 * there. createHarness starts a new journal with no death planned.
 */
export interface Writes {
  readonly log: string[];
  dieAfter(n: number): void;
  /** Holds the next write of the session vault until `release`; `reached` once it is waiting. */
  holdVault(): { reached: Promise<void>; release(): void };
}

const writes = {
  log: [] as string[],
  left: Infinity,
  /** What the next vault write waits for, if held. */
  held: null as null | { arrived(): void; released: Promise<void> },
};

/** Counts one write to `where`, or throws when the worker has died. */
function write(where: string): void {
  if (writes.left <= 0) throw new Error(`the worker died before writing ${where}`);
  writes.left -= 1;
  writes.log.push(where);
}

for (const area of ['local', 'session', 'sync'] as const) {
  const target = fakeBrowser.storage[area];
  const { set, remove, clear } = target;
  target.set = async (items: Record<string, unknown>) => {
    write(`${area}.set ${Object.keys(items).sort().join(' ')}`);
    return set.call(target, items);
  };
  target.remove = async (keys: string | string[]) => {
    write(`${area}.remove ${[keys].flat().sort().join(' ')}`);
    return remove.call(target, keys);
  };
  target.clear = async () => {
    write(`${area}.clear`);
    return clear.call(target);
  };
}

/** The extension origin's IndexedDB: a new one with each fresh profile, kept across a restart. */
let indexedDb = new IDBFactory();

/** The background's session vault over that IndexedDB, its writes counted with the others. */
export function sessionVault(): SessionVault {
  const vault = indexedDbSessionVault(indexedDb);
  return {
    read: () => vault.read(),
    async write(session) {
      const held = writes.held;
      writes.held = null;
      if (held !== null) {
        held.arrived();
        await held.released;
      }
      write(`vault.write ${session === null ? 'null' : 'session'}`);
      await vault.write(session);
    },
  };
}

export async function createHarness(
  options: {
    granted?: readonly string[];
    verifier?: () => string;
    seed?: () => Promise<void>;
    /** storage.managed's content at start-up; an Error: reading it fails (Firefox, no policy). */
    managed?: unknown;
    /**
     * The browser restarted: what the extension stored is kept (storage.session aside, which the
     * browser empties), instead of a fresh profile.
     */
    restart?: boolean;
    /** The language of the browser's UI, hence of the badge's title (default en). */
    uiLocale?: 'en' | 'fr' | 'nl';
    /** The status check's jitter draws (default 0.5: the period itself). */
    random?: () => number;
  } = {},
): Promise<Harness> {
  writes.log = [];
  writes.left = Infinity;
  writes.held = null;
  if (options.restart === true) {
    // The new worker's listeners replace the old one's; the alarms and the badge stay, as in
    // the browser. storage.session is emptied (the browser restarted).
    await fakeBrowser.storage.session.clear();
    (fakeBrowser.alarms.onAlarm as unknown as { removeAllListeners(): void }).removeAllListeners();
  } else {
    fakeBrowser.reset();
    indexedDb = new IDBFactory();
  }
  await options.seed?.();
  const clock = { now: T0 };
  const broker = new FakeBroker(BROKER, () => clock.now);
  const identity = new FakeIdentity();
  const granted = new Set(options.granted ?? [hostPermissionFor(BROKER)]);
  const events: Harness['events'] = [];
  const vault = sessionVault();
  const state = createStateStore(definePersistedStateItem(BROKER, vault), vault);
  const view = createViewStore(viewItem, () => BROKER, lastViewCache(lastViewItem));
  const listeners: (() => void)[] = [];
  const policy: Harness['policy'] = {
    value: options.managed ?? {},
    async changed() {
      for (const listener of listeners) listener();
      await background.idle();
    },
  };
  const background = createBackground({
    buildBrokerUrl: BROKER,
    state,
    view,
    fetch: broker.fetch,
    now: () => clock.now,
    identity: identity.api,
    hasHostPermission: async (pattern) => granted.has(pattern),
    managed: {
      read: async () => {
        if (policy.value instanceof Error) throw policy.value;
        return policy.value;
      },
      onChange: (listener) => listeners.push(listener),
    },
    ...(options.verifier !== undefined && { createVerifier: options.verifier }),
    action: fakeBrowser.action,
    message: messagesIn(options.uiLocale ?? 'en'),
    alarms: {
      create: (name, info) => fakeBrowser.alarms.create(name, info),
      get: (name) => fakeBrowser.alarms.get(name),
      clear: (name) => fakeBrowser.alarms.clear(name),
      onAlarm: (listener) => fakeBrowser.alarms.onAlarm.addListener(listener),
    },
    random: options.random ?? (() => 0.5),
    log: (event, fields) => events.push([event, fields]),
  });
  await background.ready;
  return {
    background,
    broker,
    identity,
    state,
    granted,
    events,
    clock,
    policy,
    view: () => view.read(),
    send: background.handlers,
    api: background.api,
    async badge() {
      const [text, title, color] = await Promise.all([
        fakeBrowser.action.getBadgeText({}),
        fakeBrowser.action.getTitle({}),
        fakeBrowser.action.getBadgeBackgroundColor({}),
      ]);
      const hex = color
        .slice(0, 3)
        .map((part: number) => part.toString(16).padStart(2, '0'))
        .join('');
      return { text, title, color: `#${hex.toUpperCase()}` };
    },
    checkAlarm: () => fakeBrowser.alarms.get(STATUS_CHECK_ALARM),
    async fireCheck() {
      const alarm = await fakeBrowser.alarms.get(STATUS_CHECK_ALARM);
      if (alarm === undefined) throw new Error('no status check alarm is set');
      clock.now = Math.max(clock.now, alarm.scheduledTime);
      await fakeBrowser.alarms.onAlarm.trigger(alarm);
      await background.idle();
    },
    writes: {
      get log() {
        return writes.log;
      },
      dieAfter(n) {
        writes.left = n;
      },
      holdVault() {
        let arrived!: () => void;
        let release!: () => void;
        const reached = new Promise<void>((resolve) => (arrived = resolve));
        writes.held = { arrived, released: new Promise<void>((resolve) => (release = resolve)) };
        return { reached, release };
      },
    },
  };
}

/** Everything the extension keeps, as one string, to prove what it does not keep. */
export async function allStoredText(): Promise<string> {
  const [local, session, vault] = await Promise.all([
    fakeBrowser.storage.local.get(null),
    fakeBrowser.storage.session.get(null),
    sessionVault().read(),
  ]);
  return JSON.stringify({ local, session, vault });
}

/** Runs the flow to its end, as the popup's Connect button would. */
export async function connect(h: Harness, reconnectId: string | null = null) {
  const started = await h.send['flow.start']({ locale: 'nl', reconnectId });
  await h.background.idle();
  return started;
}

/** The session token `signedIn` seeds. */
export const SESSION_TOKEN = 'session-token-1';

/** A harness whose storage already holds a session the fake broker knows; French by default. */
export async function signedIn(licenses = [LICENSE_A, LICENSE_B]): Promise<Harness> {
  const h = await createHarness({
    seed: () =>
      fakeBrowser.storage.local.set({
        state: {
          settings: { brokerUrl: null, locale: 'fr' },
          session: { sessionToken: SESSION_TOKEN, brokerUrl: BROKER },
        },
        state$: { v: 2 },
      }),
  });
  h.broker.seedSession(SESSION_TOKEN, licenses);
  return h;
}
