import { t, type MessageKey } from '../i18n.ts';

/**
 * Known fields of a user record, by their name with case and separators removed (`postal_code`,
 * `postalCode` and `PostalCode` are one): labelled in the user's language. Others keep the
 * humanised name present/user-record.ts gives them.
 */
const KNOWN: Record<string, MessageKey> = {
  license: 'licenseLabel',
  licence: 'licenseLabel',
  firstname: 'fieldFirstName',
  givenname: 'fieldFirstName',
  lastname: 'fieldLastName',
  familyname: 'fieldLastName',
  surname: 'fieldLastName',
  locale: 'fieldLocale',
  timezone: 'fieldTimezone',
  tz: 'fieldTimezone',
  roles: 'fieldRoles',
  company: 'fieldCompany',
  companyname: 'fieldCompany',
  organisation: 'fieldCompany',
  organization: 'fieldCompany',
  address: 'fieldAddress',
  street: 'fieldStreet',
  city: 'fieldCity',
  postalcode: 'fieldPostalCode',
  postcode: 'fieldPostalCode',
  zip: 'fieldPostalCode',
  zipcode: 'fieldPostalCode',
  country: 'fieldCountry',
  phone: 'fieldPhone',
  phonenumber: 'fieldPhone',
  vatnumber: 'fieldVatNumber',
  vat: 'fieldVatNumber',
  modules: 'fieldModules',
  preferences: 'fieldPreferences',
  currency: 'fieldCurrency',
  dateformat: 'fieldDateFormat',
  newsletter: 'fieldNewsletter',
  createdat: 'fieldCreatedAt',
  created: 'fieldCreatedAt',
  updatedat: 'fieldUpdatedAt',
  lastlogin: 'fieldLastLogin',
  lastloginat: 'fieldLastLogin',
  lastseen: 'fieldLastLogin',
};

/** A field's label: the UI's own word for a known field, else its humanised name. */
export function fieldLabel(field: { key: string; label: string }): string {
  const known = KNOWN[field.key.toLowerCase().replace(/[^a-z0-9]/g, '')];
  return known === undefined ? field.label : t(known);
}
