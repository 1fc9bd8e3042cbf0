import { browser } from 'wxt/browser';
import { sendMessage } from '../messaging.ts';
import { localizeDocument } from './document.ts';
import { t } from './i18n.ts';
import { mountOptions } from './options.ts';

/** Wires the options page to the real browser. */
export function startOptions(): void {
  localizeDocument();
  document.title = t('optionsTitle');
  const root = document.getElementById('root');
  if (root === null) throw new Error('#root is missing from options.html');
  mountOptions(root, {
    send: sendMessage,
    requestHostPermission: (pattern) => browser.permissions.request({ origins: [pattern] }),
    copy: (text) => navigator.clipboard.writeText(text),
    languages: navigator.languages.length > 0 ? navigator.languages : [navigator.language],
  });
}
