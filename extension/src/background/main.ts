import { browser } from 'wxt/browser';
import { BUILD_API_ORIGINS, BUILD_BROKER_URL } from '../build-env.ts';
import { createStateStore, definePersistedStateItem } from '../state/persisted.ts';
import { lastViewCache, lastViewItem } from '../state/last-view.ts';
import { indexedDbSessionVault } from '../state/session-vault.ts';
import { createViewStore, viewItem } from '../state/view.ts';
import { createApiChangesListener } from './api-changes.ts';
import { createApiListener } from './api-listener.ts';
import { createMessageListener } from './message-listener.ts';
import { isExtensionPage, type Self } from './senders.ts';
import { createBackground } from './service.ts';

const KEEP_ALIVE_MS = 20_000;

/**
 * Wires the background to the real browser. Must run synchronously at start-up so that the
 * message listener is registered before the event that woke the worker is dispatched.
 */
export function startBackground(): void {
  const log = (event: string, fields?: Record<string, string | number | boolean>) =>
    console.info(`[baton] ${event}`, fields ?? {});
  // The session token, in the extension origin's IndexedDB, where no content script reaches it.
  const vault = indexedDbSessionVault(indexedDB);
  const background = createBackground({
    buildBrokerUrl: BUILD_BROKER_URL,
    state: createStateStore(definePersistedStateItem(BUILD_BROKER_URL, vault), vault),
    view: createViewStore(viewItem, () => BUILD_BROKER_URL, lastViewCache(lastViewItem)),
    fetch: (input, init) => fetch(input, init),
    now: () => Date.now(),
    identity: {
      getRedirectURL: () => browser.identity.getRedirectURL(),
      launchWebAuthFlow: (url) => browser.identity.launchWebAuthFlow({ url, interactive: true }),
    },
    hasHostPermission: (pattern) => browser.permissions.contains({ origins: [pattern] }),
    managed: {
      read: () => browser.storage.managed.get(),
      onChange: (listener) =>
        browser.storage.onChanged.addListener((_changes: unknown, area: string) => {
          if (area === 'managed') listener();
        }),
    },
    action: {
      setBadgeText: (details) => browser.action.setBadgeText(details),
      setBadgeBackgroundColor: (details) => browser.action.setBadgeBackgroundColor(details),
      setTitle: (details) => browser.action.setTitle(details),
    },
    message: (key, ...substitutions) => browser.i18n.getMessage(key, substitutions),
    alarms: {
      create: (name, info) => browser.alarms.create(name, info),
      get: (name) => browser.alarms.get(name),
      clear: (name) => browser.alarms.clear(name),
      onAlarm: (listener) => browser.alarms.onAlarm.addListener(listener),
    },
    random: () => Math.random(),
    keepAlive: () => {
      // An extension API call resets the service worker's idle timer; the user may spend
      // minutes on the provider's pages, and the flow's result lives in this worker's memory.
      const timer = setInterval(() => void browser.runtime.getPlatformInfo(), KEEP_ALIVE_MS);
      return () => clearInterval(timer);
    },
    log,
  });
  const self: Self = { id: browser.runtime.id, pagesBase: browser.runtime.getURL('/') };
  // Two listeners, for disjoint messages: the popup's and options page's answer extension pages
  // only; the integrator's API also answers content scripts on the listed origins.
  browser.runtime.onMessage.addListener(
    createMessageListener(
      background.handlers,
      (sender) => isExtensionPage(sender, self),
      (type, error) => console.error(`[baton] ${type} failed`, error),
    ),
  );
  browser.runtime.onMessage.addListener(
    createApiListener(background.api, { self, origins: BUILD_API_ORIGINS, log }),
  );
  // Its change notifications, on a port each listening page opens (batonApi.onChange).
  browser.runtime.onConnect.addListener(
    createApiChangesListener(background.changes, { self, origins: BUILD_API_ORIGINS, log }),
  );
}
