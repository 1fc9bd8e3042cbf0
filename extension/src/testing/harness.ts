import { fakeBrowser } from 'wxt/testing/fake-browser';
import { hostPermissionFor } from '../broker-url.ts';
import { createBackground, type Background } from '../background/service.ts';
import { createStateStore, definePersistedStateItem, type StateStore } from '../state/persisted.ts';
import { lastViewCache, lastViewItem } from '../state/last-view.ts';
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
}

export async function createHarness(
  options: {
    granted?: readonly string[];
    verifier?: () => string;
    seed?: () => Promise<void>;
    /** storage.managed's content at start-up; an Error: reading it fails (Firefox, no policy). */
    managed?: unknown;
  } = {},
): Promise<Harness> {
  fakeBrowser.reset();
  await options.seed?.();
  const clock = { now: T0 };
  const broker = new FakeBroker(BROKER, () => clock.now);
  const identity = new FakeIdentity();
  const granted = new Set(options.granted ?? [hostPermissionFor(BROKER)]);
  const events: Harness['events'] = [];
  const state = createStateStore(definePersistedStateItem(BROKER));
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
  };
}

/** Everything the extension keeps, as one string, to prove what it does not keep. */
export async function allStoredText(): Promise<string> {
  const [local, session] = await Promise.all([
    fakeBrowser.storage.local.get(null),
    fakeBrowser.storage.session.get(null),
  ]);
  return JSON.stringify({ local, session });
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
