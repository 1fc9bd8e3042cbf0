import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface Message {
  message: string;
  description?: string;
  placeholders?: Record<string, { content: string; example?: string }>;
}

const read = (locale: string) =>
  JSON.parse(
    readFileSync(new URL(`../public/_locales/${locale}/messages.json`, import.meta.url), 'utf8'),
  ) as Record<string, Message>;

const en = read('en');
const translations = { fr: read('fr'), nl: read('nl') };
const used = (text: string) =>
  [...text.matchAll(/\$([A-Za-z_]+)\$/g)].map((m) => m[1]?.toLowerCase()).sort();

describe('_locales', () => {
  it('en describes every message for translators', () => {
    expect(Object.keys(en).length).toBeGreaterThan(50);
    for (const [key, entry] of Object.entries(en)) {
      expect(entry.description, key).toBeTruthy();
      expect(entry.message.trim(), key).not.toBe('');
    }
  });

  it.each(Object.entries(translations))(
    '%s has exactly the keys of en, none empty',
    (_locale, messages) => {
      expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort());
      for (const [key, entry] of Object.entries(messages))
        expect(entry.message.trim(), key).not.toBe('');
    },
  );

  it.each(Object.entries({ en, ...translations }))(
    '%s defines every placeholder it uses, as in en',
    (_locale, messages) => {
      for (const [key, entry] of Object.entries(messages)) {
        const defined = Object.keys(entry.placeholders ?? {}).sort();
        expect(used(entry.message), key).toEqual(defined);
        expect(defined, key).toEqual(Object.keys(en[key]?.placeholders ?? {}).sort());
      }
    },
  );

  it.each(Object.entries(translations))('%s is actually translated', (_locale, messages) => {
    const same = Object.keys(en).filter((key) => messages[key]?.message === en[key]?.message);
    // Names and words that are the same in both languages may stay as they are.
    expect(
      same.filter(
        (key) => !['extName', 'problemCode', 'licenseLabel', 'fieldModules'].includes(key),
      ),
    ).toEqual([]);
  });

  it('intlLocale matches each language', () => {
    expect([
      en['intlLocale']?.message,
      translations.fr['intlLocale']?.message,
      translations.nl['intlLocale']?.message,
    ]).toEqual(['en-GB', 'fr-BE', 'nl-BE']);
  });
});
