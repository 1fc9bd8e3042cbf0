import { describe, expect, it } from 'vitest';
import { humanize, LIMITS, summarizeUser, toDisplay } from './user-record.ts';

describe('summarizeUser', () => {
  it('picks the sandbox fields: name, e-mail, licence and its facts', () => {
    const summary = summarizeUser({
      id: 'u-1',
      name: 'An Peeters',
      email: 'an@example.be',
      language: 'nl',
      license: {
        id: 'lic-1',
        name: 'Kantoor Peeters',
        plan: 'pro',
        seats: 5,
        valid_until: '2026-12-31',
      },
      company: { name: 'Peeters BV', vat: 'BE0123456789' },
      roles: ['admin', 'billing'],
    });

    expect(summary).toMatchObject({
      name: 'An Peeters',
      email: 'an@example.be',
      licenseName: 'Kantoor Peeters',
    });
    expect(summary.facts).toEqual([
      { key: 'plan', value: { kind: 'text', text: 'pro', truncated: false } },
      { key: 'seats', value: { kind: 'number', value: 5 } },
      { key: 'validUntil', value: { kind: 'date', iso: '2026-12-31', withTime: false } },
      { key: 'language', value: { kind: 'language', code: 'nl' } },
      { key: 'licenseId', value: { kind: 'identifier', text: 'lic-1' } },
      { key: 'accountId', value: { kind: 'identifier', text: 'u-1' } },
    ]);
    expect(summary.details.map((d) => d.label)).toEqual(['Company', 'Roles']);
    expect(summary.details[0]?.value).toEqual({
      kind: 'object',
      more: 0,
      fields: [
        {
          key: 'name',
          label: 'Name',
          value: { kind: 'text', text: 'Peeters BV', truncated: false },
        },
        {
          key: 'vat',
          label: 'VAT',
          value: { kind: 'identifier', text: 'BE0123456789' },
        },
      ],
    });
  });

  it('keeps the licence fields it does not recognise in the details', () => {
    const summary = summarizeUser({ license: { name: 'L', modules: ['a', 'b'] } });

    expect(summary.details).toEqual([
      {
        key: 'license',
        label: 'License',
        value: {
          kind: 'object',
          more: 0,
          fields: [
            {
              key: 'modules',
              label: 'Modules',
              value: {
                kind: 'list',
                more: 0,
                items: [
                  { kind: 'text', text: 'a', truncated: false },
                  { kind: 'text', text: 'b', truncated: false },
                ],
              },
            },
          ],
        },
      },
    ]);
  });

  it('builds a name from first and last name, and reads other spellings', () => {
    const summary = summarizeUser({
      firstName: 'Marie',
      lastName: 'Dupont',
      emailAddress: 'marie@example.be',
      license: { title: 'Cabinet Dupont', expiresAt: '2026-01-01T00:00:00Z' },
    });

    expect(summary).toMatchObject({
      name: 'Marie Dupont',
      email: 'marie@example.be',
      licenseName: 'Cabinet Dupont',
    });
    expect(summary.facts).toEqual([
      { key: 'validUntil', value: { kind: 'date', iso: '2026-01-01T00:00:00Z', withTime: true } },
    ]);
    expect(summary.details).toEqual([]);
  });

  it.each([
    ['null', null],
    ['a string', 'hello'],
    ['an array', [1, 2]],
    ['an empty object', {}],
    ['a name that is an object', { name: { first: 'A' } }],
  ])('never fails on %s', (_name, record) => {
    expect(() => summarizeUser(record)).not.toThrow();
    expect(summarizeUser(record).name).toBeNull();
  });

  it('shows nothing at all for a record not loaded yet', () => {
    expect(summarizeUser(undefined)).toEqual({
      name: null,
      email: null,
      licenseName: null,
      facts: [],
      details: [],
    });
  });
});

describe('toDisplay', () => {
  it('bounds depth, list length, object size and text length', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10; i++) deep = { next: deep };
    let node = toDisplay(deep);
    let depth = 0;
    while (node.kind === 'object') {
      node = node.fields[0]?.value ?? { kind: 'empty' };
      depth += 1;
    }
    expect(depth).toBe(LIMITS.depth);
    expect(node).toEqual({ kind: 'elided' });

    const list = toDisplay(Array.from({ length: 100 }, (_, i) => i));
    expect(list).toMatchObject({ kind: 'list', more: 100 - LIMITS.items });
    expect(list.kind === 'list' && list.items.length).toBe(LIMITS.items);

    const object = toDisplay(
      Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i])),
    );
    expect(object).toMatchObject({ kind: 'object', more: 60 - LIMITS.fields });

    const text = toDisplay('x'.repeat(1000));
    expect(text).toMatchObject({ kind: 'text', truncated: true });
    expect(text.kind === 'text' && text.text.length).toBe(LIMITS.text + 1);
  });

  it.each([
    [true, { kind: 'boolean', value: true }],
    [null, { kind: 'empty' }],
    ['', { kind: 'empty' }],
    [[], { kind: 'empty' }],
    [Number.NaN, { kind: 'text', text: 'NaN', truncated: false }],
    ['2025-13-45', { kind: 'text', text: '2025-13-45', truncated: false }],
    [
      '<img src=x onerror=alert(1)>',
      { kind: 'text', text: '<img src=x onerror=alert(1)>', truncated: false },
    ],
  ])('shows %j sensibly', (value, expected) => {
    expect(toDisplay(value)).toEqual(expected);
  });
});

describe('identifiers', () => {
  it('shows a numeric account id exactly as the API gave it, not as a quantity', () => {
    const summary = summarizeUser({ id: 40217, name: 'Lotte Vermeulen', license: { id: 1001 } });

    expect(summary.facts).toEqual([
      { key: 'licenseId', value: { kind: 'identifier', text: '1001' } },
      { key: 'accountId', value: { kind: 'identifier', text: '40217' } },
    ]);
  });

  it.each([
    ['id', 40388, '40388'],
    ['user_id', 1234567, '1234567'],
    ['customerNumber', 98765, '98765'],
    ['vat_number', 'BE0412345678', 'BE0412345678'],
    ['postal_code', 9000, '9000'],
    ['order-ref', '2019-04-02', '2019-04-02'],
    ['external.uuid', '6c0ddc2a-6a43', '6c0ddc2a-6a43'],
  ])('%s: %j is an identifier, shown as %s', (key, value, text) => {
    expect(toDisplay(value, key)).toEqual({ kind: 'identifier', text });
  });

  it('applies to each item of a list of identifiers, and to nested fields', () => {
    expect(toDisplay([4021, 4022], 'module_ids')).toEqual({
      kind: 'list',
      more: 0,
      items: [
        { kind: 'identifier', text: '4021' },
        { kind: 'identifier', text: '4022' },
      ],
    });
    expect(toDisplay({ customer_id: 5001 })).toMatchObject({
      fields: [{ value: { kind: 'identifier', text: '5001' } }],
    });
  });

  it.each([
    ['seats', 12000],
    ['paid', 4.5],
    ['idle_minutes', 30],
  ])('leaves %s, a quantity, a number', (key, value) => {
    expect(toDisplay(value, key)).toEqual({ kind: 'number', value });
  });
});

describe('humanize', () => {
  it.each([
    ['valid_until', 'Valid until'],
    ['licenseId', 'License ID'],
    ['api_url', 'API URL'],
    ['x', 'X'],
    ['__', '__'],
  ])('%s → %s', (key, label) => {
    expect(humanize(key)).toBe(label);
  });
});
