/**
 * Turns the provider's user record (`users.me`, shape not specified) into something a card can
 * show: the fields we recognise (name, e-mail, license, plan, ...) picked out, and everything else
 * kept as a labelled tree, bounded in depth and size. Pure: no DOM, no i18n; the UI formats.
 */

export type Display =
  | { readonly kind: 'text'; readonly text: string; readonly truncated: boolean }
  | { readonly kind: 'date'; readonly iso: string; readonly withTime: boolean }
  | { readonly kind: 'number'; readonly value: number }
  /** An identifier or a code: shown exactly as the API gave it, never as a quantity or a date. */
  | { readonly kind: 'identifier'; readonly text: string }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'language'; readonly code: string }
  | { readonly kind: 'empty' }
  | { readonly kind: 'list'; readonly items: readonly Display[]; readonly more: number }
  | { readonly kind: 'object'; readonly fields: readonly Field[]; readonly more: number }
  | { readonly kind: 'elided' };

export interface Field {
  readonly key: string;
  readonly label: string;
  readonly value: Display;
}

export type FactKey = 'plan' | 'seats' | 'validUntil' | 'language' | 'accountId' | 'licenseId';

export interface Fact {
  readonly key: FactKey;
  readonly value: Display;
}

export interface UserSummary {
  readonly name: string | null;
  readonly email: string | null;
  readonly licenseName: string | null;
  /** The recognised fields, in a fixed order. */
  readonly facts: readonly Fact[];
  /** Everything not already shown above, for "All details". */
  readonly details: readonly Field[];
}

export const LIMITS = { depth: 4, fields: 40, items: 20, text: 300 } as const;

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ISO_DATE =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function isIsoDate(text: string): boolean {
  return ISO_DATE.test(text) && !Number.isNaN(Date.parse(text));
}

const LANGUAGE_KEYS = new Set(['language', 'locale', 'lang']);

/**
 * The last word of a key that names an identifier or a code (`id`, `user_id`, `customerNumber`,
 * `vat_number`, `postal_code`). Read to a support desk, "40,217" or "40 388" is not the account
 * 40217: such values keep the API's own spelling.
 */
const IDENTIFIER_WORDS = new Set([
  'id',
  'ids',
  'uuid',
  'guid',
  'number',
  'nr',
  'no',
  'num',
  'code',
  'ref',
  'reference',
  'key',
  'iban',
  'bic',
  'vat',
  'zip',
  'zipcode',
  'postcode',
  'phone',
  'sku',
  'ean',
  'isbn',
]);

/** `licenseId` → ["license", "Id"], `valid_until` → ["valid", "until"]. */
function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_.-]+/)
    .filter((word) => word !== '');
}

function isIdentifierKey(key: string): boolean {
  const last = keyWords(key).at(-1)?.toLowerCase();
  return last !== undefined && IDENTIFIER_WORDS.has(last);
}

/** `valid_until` → "Valid until", `licenseId` → "License ID". */
export function humanize(key: string): string {
  const words = keyWords(key)
    .map((word) => word.toLowerCase())
    .map((word) =>
      ['id', 'url', 'api', 'vat', 'uuid'].includes(word) ? word.toUpperCase() : word,
    );
  const sentence = words.join(' ');
  return sentence === '' ? key : sentence.charAt(0).toUpperCase() + sentence.slice(1);
}

export function toDisplay(value: unknown, key = '', depth = 0): Display {
  if (value === null || value === undefined || value === '') return { kind: 'empty' };
  if (typeof value === 'boolean') return { kind: 'boolean', value };
  if (
    ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'string') &&
    isIdentifierKey(key)
  ) {
    const text = String(value);
    return {
      kind: 'identifier',
      text: text.length > LIMITS.text ? `${text.slice(0, LIMITS.text)}…` : text,
    };
  }
  if (typeof value === 'number') {
    return Number.isFinite(value)
      ? { kind: 'number', value }
      : { kind: 'text', text: String(value), truncated: false };
  }
  if (typeof value === 'string') {
    if (isIsoDate(value)) return { kind: 'date', iso: value, withTime: value.length > 10 };
    if (LANGUAGE_KEYS.has(key.toLowerCase()) && /^[a-z]{2,3}(?:[-_][A-Za-z]{2,4})?$/.test(value)) {
      return { kind: 'language', code: value };
    }
    const truncated = value.length > LIMITS.text;
    return { kind: 'text', text: truncated ? `${value.slice(0, LIMITS.text)}…` : value, truncated };
  }
  if (depth >= LIMITS.depth) return { kind: 'elided' };
  if (Array.isArray(value)) {
    if (value.length === 0) return { kind: 'empty' };
    return {
      kind: 'list',
      items: value.slice(0, LIMITS.items).map((item) => toDisplay(item, key, depth + 1)),
      more: Math.max(0, value.length - LIMITS.items),
    };
  }
  if (isRecord(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) return { kind: 'empty' };
    return {
      kind: 'object',
      fields: entries.slice(0, LIMITS.fields).map(([k, v]) => ({
        key: k,
        label: humanize(k),
        value: toDisplay(v, k, depth + 1),
      })),
      more: Math.max(0, entries.length - LIMITS.fields),
    };
  }
  // bigint, symbol, function: not JSON, but never crash.
  return { kind: 'text', text: String(value), truncated: false };
}

/** The first key of `keys` whose value passes `accept`, and that value. */
function pick(
  record: Json,
  keys: readonly string[],
  accept: (value: unknown) => boolean,
): [string, unknown] | null {
  for (const key of keys) {
    if (Object.hasOwn(record, key) && accept(record[key])) return [key, record[key]];
  }
  return null;
}

const isText = (value: unknown): value is string =>
  typeof value === 'string' && value.trim() !== '';
const isScalar = (value: unknown) =>
  isText(value) || (typeof value === 'number' && Number.isFinite(value));

const KEYS = {
  name: ['name', 'full_name', 'fullName', 'display_name', 'displayName'],
  firstName: ['first_name', 'firstName', 'given_name', 'givenName'],
  lastName: ['last_name', 'lastName', 'family_name', 'familyName'],
  email: ['email', 'email_address', 'emailAddress', 'mail'],
  language: ['language', 'locale', 'lang'],
  accountId: ['id', 'user_id', 'userId'],
  license: ['license', 'licence'],
  licenseNameTop: ['license_name', 'licenseName', 'licence_name', 'licenceName'],
  licenseName: ['name', 'title', 'label'],
  plan: ['plan', 'tier', 'edition'],
  seats: ['seats', 'seat_count', 'seatCount', 'max_users', 'maxUsers'],
  validUntil: [
    'valid_until',
    'validUntil',
    'expires_at',
    'expiresAt',
    'expiry',
    'end_date',
    'endDate',
  ],
  licenseId: ['id', 'license_id', 'licenseId'],
} as const;

export function summarizeUser(record: unknown): UserSummary {
  if (!isRecord(record)) {
    return {
      name: null,
      email: null,
      licenseName: null,
      facts: [],
      details: record === undefined ? [] : [{ key: '', label: '', value: toDisplay(record) }],
    };
  }
  const used = new Set<string>();
  const usedInLicense = new Set<string>();
  const take = (
    from: Json,
    keys: readonly string[],
    accept: (v: unknown) => boolean,
    into: Set<string>,
  ) => {
    const found = pick(from, keys, accept);
    if (found === null) return null;
    into.add(found[0]);
    return found;
  };

  let name = take(record, KEYS.name, isText, used)?.[1] as string | undefined;
  if (name === undefined) {
    const parts = [KEYS.firstName, KEYS.lastName]
      .map((keys) => take(record, keys, isText, used)?.[1] as string | undefined)
      .filter((part): part is string => part !== undefined);
    if (parts.length > 0) name = parts.join(' ');
  }
  const email = take(record, KEYS.email, isText, used)?.[1] as string | undefined;

  const facts: Fact[] = [];
  const licenseEntry = pick(record, KEYS.license, isRecord);
  const license = licenseEntry === null ? null : (licenseEntry[1] as Json);
  let licenseName: string | undefined;
  if (license !== null) {
    licenseName = take(license, KEYS.licenseName, isText, usedInLicense)?.[1] as string | undefined;
    const fact = (key: FactKey, keys: readonly string[], accept: (v: unknown) => boolean) => {
      const found = take(license, keys, accept, usedInLicense);
      if (found !== null) facts.push({ key, value: toDisplay(found[1], found[0]) });
    };
    fact('plan', KEYS.plan, isScalar);
    fact('seats', KEYS.seats, isScalar);
    fact('validUntil', KEYS.validUntil, isText);
    fact('licenseId', KEYS.licenseId, isScalar);
  } else {
    licenseName = take(record, KEYS.licenseNameTop, isText, used)?.[1] as string | undefined;
  }
  const language = take(record, KEYS.language, isText, used);
  if (language !== null) facts.push({ key: 'language', value: toDisplay(language[1], 'language') });
  const accountId = take(record, KEYS.accountId, isScalar, used);
  if (accountId !== null)
    facts.push({ key: 'accountId', value: toDisplay(accountId[1], accountId[0]) });

  const details: Field[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (used.has(key)) continue;
    if (licenseEntry !== null && key === licenseEntry[0]) {
      const rest = Object.fromEntries(
        Object.entries(license ?? {}).filter(([k]) => !usedInLicense.has(k)),
      );
      if (Object.keys(rest).length > 0)
        details.push({ key, label: humanize(key), value: toDisplay(rest, key, 0) });
      continue;
    }
    details.push({ key, label: humanize(key), value: toDisplay(value, key, 0) });
  }
  const order: readonly FactKey[] = [
    'plan',
    'seats',
    'validUntil',
    'language',
    'licenseId',
    'accountId',
  ];
  facts.sort((a, b) => order.indexOf(a.key) - order.indexOf(b.key));
  return {
    name: name ?? null,
    email: email ?? null,
    licenseName: licenseName ?? null,
    facts,
    details: details.slice(0, LIMITS.fields),
  };
}
