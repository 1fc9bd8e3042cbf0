/** The authorization pages speak French or Dutch, and nothing else. */
export const LOCALES = ['fr', 'nl'] as const;
export type Locale = (typeof LOCALES)[number];

export const isLocale = (value: string): value is Locale =>
  (LOCALES as readonly string[]).includes(value);

export interface License {
  id: string;
  name: string;
  plan: 'solo' | 'team' | 'enterprise';
  seats: number;
  /** ISO date (YYYY-MM-DD). */
  validUntil: string;
  vatNumber: string;
  city: string;
  modules: readonly string[];
}

export interface Account {
  id: number;
  email: string;
  password: string;
  firstName: string;
  lastName: string;
  language: Locale;
  licenses: readonly License[];
}

/** The one password of every seeded account. */
export const DEMO_PASSWORD = 'baton-demo';

/**
 * Seeded accounts: a Dutch-speaking user with two licenses, a French-speaking user with one.
 * Names carry an apostrophe and an ampersand on purpose: pages must escape them.
 */
export const ACCOUNTS: readonly Account[] = [
  {
    id: 40217,
    email: 'lotte.vermeulen@example.be',
    password: DEMO_PASSWORD,
    firstName: 'Lotte',
    lastName: 'Vermeulen',
    language: 'nl',
    licenses: [
      {
        id: 'lic-1001',
        name: 'Bakkerij Vermeulen',
        plan: 'team',
        seats: 5,
        validUntil: '2027-03-31',
        vatNumber: 'BE0412345678',
        city: 'Gent',
        modules: ['invoicing', 'stock', 'pos'],
      },
      {
        id: 'lic-1002',
        name: 'Vermeulen & Zonen Vastgoed',
        plan: 'solo',
        seats: 1,
        validUntil: '2026-12-31',
        vatNumber: 'BE0687654321',
        city: 'Aalst',
        modules: ['invoicing'],
      },
    ],
  },
  {
    id: 40388,
    email: 'elodie.lambert@example.be',
    password: DEMO_PASSWORD,
    firstName: 'Élodie',
    lastName: 'Lambert',
    language: 'fr',
    licenses: [
      {
        id: 'lic-2001',
        name: "Librairie L'Étoile",
        plan: 'enterprise',
        seats: 12,
        validUntil: '2027-06-30',
        vatNumber: 'BE0798123456',
        city: 'Namur',
        modules: ['invoicing', 'stock', 'payroll', 'webshop'],
      },
    ],
  },
];

export function findAccount(email: string): Account | undefined {
  const wanted = email.trim().toLowerCase();
  return ACCOUNTS.find((account) => account.email === wanted);
}

export function findLicense(licenseId: string): { account: Account; license: License } | undefined {
  for (const account of ACCOUNTS) {
    const license = account.licenses.find((candidate) => candidate.id === licenseId);
    if (license) return { account, license };
  }
  return undefined;
}
