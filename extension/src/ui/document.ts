import { t } from './i18n.ts';

/** `<html lang>` follows the language of the messages shown, not the browser's. */
export function localizeDocument(): void {
  document.documentElement.lang = t('intlLocale');
}
