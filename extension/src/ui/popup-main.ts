import { browser } from 'wxt/browser';
import { BUILD_BROKER_URL } from '../build-env.ts';
import { sendMessage } from '../messaging.ts';
import { emptyView, viewItem } from '../state/view.ts';
import { localizeDocument } from './document.ts';
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
      readView: () => viewItem.getValue(),
      watchView: (listener) => void viewItem.watch(listener),
      requestHostPermission: (pattern) => browser.permissions.request({ origins: [pattern] }),
      openOptions: () => void browser.runtime.openOptionsPage(),
      languages: navigator.languages.length > 0 ? navigator.languages : [navigator.language],
      now: () => Date.now(),
      fallbackView: emptyView(BUILD_BROKER_URL),
    },
  );
}
