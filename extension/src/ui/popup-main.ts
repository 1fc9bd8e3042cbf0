import { browser } from 'wxt/browser';
import { BUILD_BROKER_URL } from '../build-env.ts';
import { sendMessage } from '../messaging.ts';
import { lastViewItem, readLastView } from '../state/last-view.ts';
import { emptyView, viewItem } from '../state/view.ts';
import { localizeDocument } from './document.ts';
import { prepareFormatters } from './i18n.ts';
import { mountPopup } from './popup/mount.ts';

/** Wires the popup to the real browser. */
export function startPopup(): void {
  localizeDocument();
  const byId = <T extends HTMLElement>(id: string) => {
    const element = document.getElementById(id);
    if (element === null) throw new Error(`#${id} is missing from popup.html`);
    return element as T;
  };
  mountPopup(
    {
      status: byId('status'),
      main: byId('main'),
      settingsButton: byId<HTMLButtonElement>('settings-button'),
    },
    {
      send: sendMessage,
      // Both at once: after a browser restart storage.session is empty, and the licenses kept in
      // storage.local are painted while the background wakes and refreshes them.
      readView: async () => {
        const [current, kept] = await Promise.all([
          viewItem.getValue(),
          readLastView(lastViewItem),
        ]);
        return current ?? kept;
      },
      watchView: (listener) => void viewItem.watch(listener),
      requestHostPermission: (pattern) => browser.permissions.request({ origins: [pattern] }),
      openOptions: () => void browser.runtime.openOptionsPage(),
      languages: navigator.languages.length > 0 ? navigator.languages : [navigator.language],
      now: () => Date.now(),
      fallbackView: emptyView(BUILD_BROKER_URL),
    },
  );
  // The view is being read from storage now: meanwhile, pay the formatters' start-up cost.
  prepareFormatters();
}
