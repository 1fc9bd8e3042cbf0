import { describe, expect, it } from 'vitest';
import { displayHost, hostPermissionFor, parseBrokerUrl } from './broker-url.ts';
import { FALLBACK_LOCALE, localeFromLanguages } from './locale.ts';

describe('parseBrokerUrl', () => {
  it.each([
    ['https://broker.example.be', 'https://broker.example.be'],
    ['  https://broker.example.be/  ', 'https://broker.example.be'],
    ['https://broker.example.be:8443/baton/', 'https://broker.example.be:8443/baton'],
    ['HTTPS://Broker.Example.BE', 'https://broker.example.be'],
    ['http://127.0.0.1:8787', 'http://127.0.0.1:8787'],
    ['http://localhost:8787/', 'http://localhost:8787'],
    ['http://[::1]:8787', 'http://[::1]:8787'],
  ])('accepts %j as %s', (input, url) => {
    expect(parseBrokerUrl(input)).toEqual({ ok: true, url });
  });

  it.each([
    ['', 'empty'],
    ['   ', 'empty'],
    ['broker.example.be', 'not_a_url'],
    ['ftp://broker.example.be', 'unsupported_scheme'],
    ['javascript:alert(1)', 'unsupported_scheme'],
    ['http://broker.example.be', 'insecure'],
    ['https://user:pw@broker.example.be', 'has_credentials'],
    ['https://broker.example.be/?x=1', 'has_query_or_fragment'],
    ['https://broker.example.be/#top', 'has_query_or_fragment'],
    ['https://broker.example.be/?', 'has_query_or_fragment'],
  ])('rejects %j: %s', (input, problem) => {
    expect(parseBrokerUrl(input)).toEqual({ ok: false, problem });
  });
});

describe('hostPermissionFor', () => {
  it.each([
    ['http://127.0.0.1:8787', 'http://127.0.0.1/*'],
    ['https://broker.example.be:8443/baton', 'https://broker.example.be/*'],
    ['http://[::1]:8787', 'http://[::1]/*'],
  ])('%s needs %s (match patterns carry no port)', (url, pattern) => {
    expect(hostPermissionFor(url)).toBe(pattern);
  });
});

describe('displayHost', () => {
  it('shows host and port', () => {
    expect(displayHost('http://127.0.0.1:8787')).toBe('127.0.0.1:8787');
    expect(displayHost('nonsense')).toBe('nonsense');
  });
});

describe('localeFromLanguages', () => {
  it.each([
    [['nl-BE', 'fr-BE'], 'nl'],
    [['fr-BE', 'nl'], 'fr'],
    [['en-US', 'fr'], 'fr'],
    [['FR_be'], 'fr'],
    [['en-US', 'de'], FALLBACK_LOCALE],
    [[], FALLBACK_LOCALE],
  ])('%j → %s', (languages, locale) => {
    expect(localeFromLanguages(languages)).toBe(locale);
  });
});
