import { describe, expect, it } from 'vitest';
import { checkProxyPath, isConnectionId } from './proxy-path.ts';

describe('checkProxyPath', () => {
  it.each([
    'users.me',
    'users/42/licenses',
    'search',
    'a%20b',
    'trailing/',
    '',
    'users@me',
    'oauth2x/a',
    'users/oauth2/access_token',
  ])('passes %j through unchanged', (path) => {
    expect(checkProxyPath(path)).toBe(path);
  });

  it.each([
    ['a dot-dot segment', '../oauth2/access_token'],
    ['a dot-dot in the middle', 'users/../../x'],
    ['a dot segment', './users.me'],
    ['encoded dots', '%2e%2e/x'],
    ['upper-case encoded dots', '%2E%2E/x'],
    ['double encoding', '%252e%252e/x'],
    ['an encoded slash', 'users%2fme'],
    ['an encoded backslash', 'users%5cme'],
    ['a backslash', 'users\\..\\x'],
    ['a protocol-relative path', '/evil.test/x'],
    ['an empty segment', 'users//me'],
    ['a fullwidth solidus', 'users%EF%BC%8F..%EF%BC%8Fx'],
    ['a fullwidth full stop pair', '%EF%BC%8E%EF%BC%8E/x'],
    ['CR/LF', 'users.me%0d%0aX-Injected:%20yes'],
    ['a raw CR/LF', 'users.me\r\nX: y'],
    ['a NUL', 'users%00'],
    ['a scheme', 'http:evil.test'],
    ['a raw space', 'a b'],
    ['raw non-ASCII', 'caf\u00e9'],
    ['malformed encoding', '%E0%A4%A'],
    ['64 KB', 'a'.repeat(65_536)],
    ['a dot-dot with a path parameter (Tomcat, Spring)', 'echo/..;/..;/other'],
    ['a dot with a path parameter', 'users/.;x/me'],
    ['an encoded semicolon after dot-dot', 'echo/..%3b/other'],
    ['the token endpoint', 'oauth2/access_token'],
    ['the token folder', 'oauth2'],
    ['the token folder in capitals', 'OAuth2/access_token'],
    ['the token folder, encoded', 'oauth%32/access_token'],
    ['the token folder with a path parameter', 'oauth2;x/access_token'],
    ['the token folder with a trailing dot', 'oauth2./access_token'],
    ['the token folder with trailing dots', 'oauth2../access_token'],
    ['the token folder alone, with a trailing dot', 'oauth2.'],
    ['the token folder with an encoded space', 'oauth2%20/access_token'],
    ['the token folder with a leading encoded space', '%20oauth2/access_token'],
    ['the token folder with dots and spaces', 'OAuth2.%20./access_token'],
    ['the token folder with an encoded dot', 'oauth2%2E/access_token'],
    ['the token folder with an encoded letter', '%6Fauth2/access_token'],
    ['the token folder, every letter encoded', '%6F%61%75%74%68%32/access_token'],
    ['the token folder with a space and a path parameter', 'oauth2%20;x/access_token'],
    ['the token folder with a dot and an encoded semicolon', 'OAUTH2.%3Bx/access_token'],
    ['the token folder with a no-break space', 'oauth2%C2%A0/access_token'],
    ['the token folder with a backslash', 'oauth2\\access_token'],
  ])('refuses %s', (_name, path) => {
    expect(checkProxyPath(path)).toBeUndefined();
  });
});

describe('isConnectionId', () => {
  it.each(['Q2Fyb2wgZXQgQ2hhcmxlcw', 'conn-a', 'c_1'])('takes %j', (id) => {
    expect(isConnectionId(id)).toBe(true);
  });

  it.each(['', '.', '..', 'a.b', 'a/b', '%2e', 'a b', 'c\u00e9', 'c'.repeat(257)])(
    'refuses %j',
    (id) => {
      expect(isConnectionId(id)).toBe(false);
    },
  );
});
