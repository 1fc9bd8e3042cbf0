import type { FakeLicense } from './fake-broker.ts';

/**
 * Two licenses as the sandbox provider describes its users (`users.me`), for unit tests and
 * screenshots. The second one carries fields the extension does not know, nested.
 */
export const LICENSE_A: FakeLicense = {
  connectionId: 'conn-a',
  user: {
    id: 'u-1',
    name: 'An Peeters',
    email: 'an.peeters@example.be',
    language: 'nl',
    license: {
      id: 'lic-1',
      name: 'Kantoor Peeters',
      plan: 'pro',
      seats: 5,
      valid_until: '2026-12-31',
    },
  },
};

export const LICENSE_B: FakeLicense = {
  connectionId: 'conn-b',
  apiOrigin: 'https://api-eu2.provider.example',
  user: {
    id: 'u-2',
    name: 'Luc Dubois',
    email: 'luc.dubois@example.be',
    language: 'fr',
    license: {
      id: 'lic-2',
      name: 'Fiduciaire Dubois & Associés',
      plan: 'team',
      seats: 12,
      valid_until: '2026-06-30',
      modules: ['invoicing', 'payroll', 'vat'],
    },
    company: {
      name: 'Dubois SRL',
      vat_number: 'BE0456789123',
      address: { street: 'Rue de la Loi 16', city: 'Bruxelles', postal_code: '1000' },
    },
    two_factor_enabled: true,
    last_login_at: '2025-01-14T16:20:00Z',
  },
};
