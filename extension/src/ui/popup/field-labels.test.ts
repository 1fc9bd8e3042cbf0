import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeAll, describe, expect, it } from 'vitest';
import en from '../../../public/_locales/en/messages.json';
import fr from '../../../public/_locales/fr/messages.json';
import { fieldLabel } from './field-labels.ts';

const catalogs = { en, fr } as Record<string, Record<string, { message: string }>>;
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
