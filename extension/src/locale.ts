import type { Locale } from '@baton/shared';

/**
 * The languages of the provider's authorization pages, by their own names, in the order the
 * pickers list them. `Record<Locale, …>` keeps this in step with @baton/shared's LOCALES without
 * importing its schemas into the popup.
 */
export const LOCALE_NAMES = { nl: 'Nederlands', fr: 'Français' } as const satisfies Record<
  Locale,
  string
>;

export const PICKER_LOCALES = Object.keys(LOCALE_NAMES) as Locale[];

export function isPickerLocale(value: string): value is Locale {
  return Object.hasOwn(LOCALE_NAMES, value);
}

/** Used when none of the browser's languages is Dutch or French. */
export const FALLBACK_LOCALE: Locale = 'nl';

/** The first of the browser's preferred languages that the authorization pages speak. */
export function localeFromLanguages(languages: readonly string[]): Locale {
  for (const language of languages) {
    const base = language.toLowerCase().split(/[-_]/)[0] ?? '';
    if (isPickerLocale(base)) return base;
  }
  return FALLBACK_LOCALE;
}
