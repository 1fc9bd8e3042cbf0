import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fieldLabel } from './field-labels.ts';

const catalog = (locale: string) =>
  JSON.parse(
    readFileSync(
      new URL(`../../../public/_locales/${locale}/messages.json`, import.meta.url),
      'utf8',
    ),
  ) as Record<string, { message: string }>;
const catalogs: Record<string, Record<string, { message: string }>> = {
  en: catalog('en'),
  fr: catalog('fr'),
};
let locale = 'en';

beforeAll(() => {
  // The real catalogs, so that the labels are the translations themselves.
  fakeBrowser.i18n.getMessage = ((key: string) =>
    catalogs[locale]?.[key]?.message ?? '') as typeof fakeBrowser.i18n.getMessage;
});

describe("the labels of a user record's fields in 'All details'", () => {
  it.each([
    ['postal_code', 'Postal code', 'Code postal'],
    ['postalCode', 'Postal code', 'Code postal'],
    ['company', 'Company', 'Entreprise'],
    ['address', 'Address', 'Adresse'],
    ['city', 'City', 'Ville'],
    ['last_login_at', 'Last login', 'Dernière connexion'],
    ['created_at', 'Created on', 'Créé le'],
    ['vat_number', 'VAT number', 'Numéro de TVA'],
  ])('labels the known field %s in the user language', (key, english, french) => {
    locale = 'en';
    expect(fieldLabel({ key, label: 'humanised' })).toBe(english);
    locale = 'fr';
    expect(fieldLabel({ key, label: 'humanised' })).toBe(french);
  });

  it('keeps the humanised name of a field it does not know', () => {
    expect(fieldLabel({ key: 'favourite_colour', label: 'Favourite colour' })).toBe(
      'Favourite colour',
    );
  });
});
