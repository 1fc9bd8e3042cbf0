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

/**
 * One formatter per locale and kind, made on first use: constructing an Intl formatter loads its
 * locale data, which in a fresh renderer (the popup's first open after a browser start) costs far
 * more than formatting, and a card formats a dozen values.
 */
const formatters = new Map<string, object>();
function formatter<F extends object>(kind: string, make: (locale: string) => F): F {
  const key = `${uiLocale()}|${kind}`;
  let made = formatters.get(key) as F | undefined;
  if (made === undefined) {
    made = make(uiLocale());
    formatters.set(key, made);
  }
  return made;
}

/**
 * Makes the date, time and number formatters now. The first date formatter of a fresh renderer
 * costs 50 to 150 ms (ICU's calendar data); the popup calls this while its storage reads are in
 * flight, so that the cost overlaps them instead of following them.
 */
export function prepareFormatters(): void {
  formatDate('2000-01-01', true);
  formatDate('2000-01-01');
  formatTime(0);
  formatNumber(0);
}

export function formatDate(iso: string, withTime = false): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return formatter(
    withTime ? 'date-time' : 'date',
    (locale) =>
      new Intl.DateTimeFormat(locale, {
        dateStyle: 'medium',
        ...(withTime && { timeStyle: 'short' }),
      }),
  ).format(date);
}

export function formatTime(epochMs: number): string {
  return formatter(
    'time',
    (locale) => new Intl.DateTimeFormat(locale, { timeStyle: 'short' }),
  ).format(new Date(epochMs));
}

export function formatNumber(value: number): string {
  return formatter('number', (locale) => new Intl.NumberFormat(locale)).format(value);
}

export function languageName(code: string): string {
  try {
    const name = formatter(
      'language',
      (locale) => new Intl.DisplayNames([locale], { type: 'language' }),
    ).of(code.replace('_', '-'));
    return name === undefined || name === code
      ? code
      : name.charAt(0).toLocaleUpperCase() + name.slice(1);
  } catch {
    return code;
  }
}
