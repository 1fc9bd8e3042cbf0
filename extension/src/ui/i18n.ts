import { browser } from 'wxt/browser';
import type messages from '../../public/_locales/en/messages.json';

/** Every message key; en/messages.json is the reference (a unit test keeps fr and nl complete). */
export type MessageKey = keyof typeof messages;

/** Looked up at each call, so a unit test can put the fake browser's own in place. */
const getMessage = (key: string, substitutions?: string[]): string =>
  (browser.i18n.getMessage as (key: string, substitutions?: string[]) => string)(
    key,
    substitutions,
  );

export function t(key: MessageKey, ...substitutions: string[]): string {
  return getMessage(key, substitutions) || key;
}

/**
 * The locale the displayed messages are written in ("en-GB", "fr-BE", "nl-BE"), for dates and
 * numbers: it follows the messages actually shown, so a German browser gets English messages
 * with English dates rather than a mix.
 */
export function uiLocale(): string {
  return t('intlLocale');
}

export function formatDate(iso: string, withTime = false): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return new Intl.DateTimeFormat(uiLocale(), {
    dateStyle: 'medium',
    ...(withTime && { timeStyle: 'short' }),
  }).format(date);
}

export function formatTime(epochMs: number): string {
  return new Intl.DateTimeFormat(uiLocale(), { timeStyle: 'short' }).format(new Date(epochMs));
}

export function formatNumber(value: number): string {
  return new Intl.NumberFormat(uiLocale()).format(value);
}

export function languageName(code: string): string {
  try {
    const name = new Intl.DisplayNames([uiLocale()], { type: 'language' }).of(
      code.replace('_', '-'),
    );
    return name === undefined || name === code
      ? code
      : name.charAt(0).toLocaleUpperCase() + name.slice(1);
  } catch {
    return code;
  }
}
