import { describe, expect, it } from 'vitest';
import { checkApiUrl, parseAllowlist } from './allowlist.ts';

const allowlist = parseAllowlist('https://*.api.example.com, http://127.0.0.1:8788');

describe('parseAllowlist', () => {
  it('reads schemes, wildcards and default ports', () => {
    expect(allowlist).toEqual([
      { scheme: 'https', wildcard: true, host: 'api.example.com', port: '443' },
      { scheme: 'http', wildcard: false, host: '127.0.0.1', port: '8788' },
    ]);
  });

  it.each(['ftp://x.example', 'https://x.example/path', 'x.example', 'https://*.*.x.example', ''])(
    'refuses %j',
    (value) => {
      expect(() => parseAllowlist(value)).toThrow();
    },
  );
});

describe('checkApiUrl', () => {
  it.each([
    ['https://eu1.api.example.com/licenses/42', 'https://eu1.api.example.com/licenses/42'],
    ['https://eu1.api.example.com', 'https://eu1.api.example.com'],
    ['https://eu1.api.example.com/', 'https://eu1.api.example.com'],
    ['http://127.0.0.1:8788/licenses/lic-1', 'http://127.0.0.1:8788/licenses/lic-1'],
  ])('accepts %s', (raw, stored) => {
    expect(checkApiUrl(raw, allowlist)).toBe(stored);
  });

  it.each([
    ['a foreign host', 'https://evil.test/licenses/1'],
    ['http where only https is allowed', 'http://eu1.api.example.com/'],
    ['the wildcard base itself', 'https://api.example.com/'],
    ['two labels under the wildcard', 'https://a.b.api.example.com/'],
    ['a look-alike suffix', 'https://eu1.api.example.com.evil.test/'],
    ['userinfo', 'https://eu1.api.example.com@evil.test/'],
    ['a fragment', 'https://eu1.api.example.com/#x'],
    ['a query', 'https://eu1.api.example.com/?x=1'],
    ['a backslash', 'https://eu1.api.example.com\\@evil.test/'],
    ['an encoded slash', 'https://eu1.api.example.com/a%2f..%2fb'],
    ['an encoded NUL', 'https://eu1.api.example.com/a%00'],
    ['CR/LF', 'https://eu1.api.example.com/a\r\nX: y'],
    ['a dot-dot segment', 'https://eu1.api.example.com/a/../b'],
    ['another port', 'http://127.0.0.1:8789/licenses/1'],
    ['a short IPv4 form', 'http://127.1:8788/licenses/1'],
    ['a hexadecimal IPv4', 'http://0x7f000001:8788/licenses/1'],
    ['a mapped IPv6', 'http://[::ffff:127.0.0.1]:8788/licenses/1'],
    ['a non-http scheme', 'javascript:alert(1)'],
    ['a non-canonical default port', 'https://eu1.api.example.com:443/v1'],
    ['an upper-case host', 'https://EU1.api.example.com/'],
    ['an empty value', ''],
    ['an 8 KB value', `https://eu1.api.example.com/${'a'.repeat(8192)}`],
  ])('refuses %s', (_name, raw) => {
    expect(checkApiUrl(raw, allowlist)).toBeUndefined();
  });
});
