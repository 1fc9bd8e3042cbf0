import { describe, expect, it } from 'vitest';
import { effectiveSettings, managedFields, NOT_MANAGED, parseManaged } from './managed.ts';

describe('parseManaged', () => {
  it('takes a valid broker URL (normalised) and language', () => {
    expect(parseManaged({ brokerUrl: 'https://baton.example.be/', locale: 'nl' })).toEqual({
      settings: { brokerUrl: 'https://baton.example.be', locale: 'nl', statusCheckMinutes: null },
      ignored: [],
    });
  });

  it.each([
    ['the check off', 0],
    ['a minute', 1],
    ['an hour', 60],
    ['a day, the longest', 1440],
  ])('takes a status check period of %s', (_label, minutes) => {
    expect(parseManaged({ statusCheckMinutes: minutes })).toEqual({
      settings: { ...NOT_MANAGED, statusCheckMinutes: minutes },
      ignored: [],
    });
  });

  it.each([
    ['nothing set', {}],
    ['not an object', 'https://baton.example.be'],
    ['null', null],
    ['a list', ['https://baton.example.be']],
  ])('manages nothing when the policy holds %s', (_label, raw) => {
    expect(parseManaged(raw)).toEqual({ settings: NOT_MANAGED, ignored: [] });
  });

  it.each([
    ['plain http off loopback', { brokerUrl: 'http://baton.example.be' }, 'brokerUrl'],
    ['credentials in the URL', { brokerUrl: 'https://u:p@baton.example.be' }, 'brokerUrl'],
    ['a number', { brokerUrl: 8787 }, 'brokerUrl'],
    ['a language the pages do not speak', { locale: 'de' }, 'locale'],
    ['a language in capitals', { locale: 'FR' }, 'locale'],
    ['a period in a string', { statusCheckMinutes: '30' }, 'statusCheckMinutes'],
    ['a fraction of a minute', { statusCheckMinutes: 0.5 }, 'statusCheckMinutes'],
    ['a negative period', { statusCheckMinutes: -30 }, 'statusCheckMinutes'],
    ['more than a day', { statusCheckMinutes: 1441 }, 'statusCheckMinutes'],
    ['off as a boolean', { statusCheckMinutes: false }, 'statusCheckMinutes'],
  ])('ignores %s, and says which key', (_label, raw, key) => {
    expect(parseManaged(raw)).toEqual({ settings: NOT_MANAGED, ignored: [key] });
  });

  it('keeps the valid key when the other is not valid', () => {
    expect(parseManaged({ brokerUrl: 'ftp://x', locale: 'fr' })).toEqual({
      settings: { brokerUrl: null, locale: 'fr', statusCheckMinutes: null },
      ignored: ['brokerUrl'],
    });
  });
});

describe('precedence', () => {
  const user = { brokerUrl: 'https://mine.example.be', locale: 'fr' as const };

  it.each([
    ['nothing managed: the user’s', NOT_MANAGED, user],
    [
      'a managed broker wins; the user’s language stays',
      { brokerUrl: 'https://org.example.be', locale: null, statusCheckMinutes: null },
      { brokerUrl: 'https://org.example.be', locale: 'fr' },
    ],
    [
      'a managed language wins; the user’s broker stays',
      { brokerUrl: null, locale: 'nl' as const, statusCheckMinutes: null },
      { brokerUrl: 'https://mine.example.be', locale: 'nl' },
    ],
    [
      'both managed: both the organisation’s',
      { brokerUrl: 'https://org.example.be', locale: 'nl' as const, statusCheckMinutes: null },
      { brokerUrl: 'https://org.example.be', locale: 'nl' },
    ],
  ])('%s', (_label, managed, expected) => {
    expect(effectiveSettings(user, managed)).toEqual(expected);
  });

  it('a user who set nothing gets the organisation’s, else the defaults (null)', () => {
    const none = { brokerUrl: null, locale: null };
    expect(effectiveSettings(none, NOT_MANAGED)).toEqual(none);
    expect(effectiveSettings(none, { ...NOT_MANAGED, locale: 'nl' })).toEqual({
      brokerUrl: null,
      locale: 'nl',
    });
  });

  it('names the fields the organisation holds', () => {
    expect(managedFields({ ...NOT_MANAGED, brokerUrl: 'https://org.example.be' })).toEqual({
      brokerUrl: true,
      locale: false,
    });
  });
});
