import { describe, expect, it } from 'vitest';
import { createSealer, DecryptError, parseKeyring } from './crypto.ts';

const keyA = Buffer.alloc(32, 1).toString('base64');
const keyB = Buffer.alloc(32, 2).toString('base64');

describe('parseKeyring', () => {
  it('makes the first key active', () => {
    expect(parseKeyring(`b:${keyB},a:${keyA}`).activeKid).toBe('b');
  });

  it.each([
    ['a short key', `a:${Buffer.alloc(16).toString('base64')}`],
    ['no kid', keyA],
    ['a repeated kid', `a:${keyA},a:${keyB}`],
    ['a bad kid', `a.b:${keyA}`],
  ])('refuses %s', (_name, value) => {
    expect(() => parseKeyring(value)).toThrow();
  });
});

describe('sealer', () => {
  const sealer = createSealer(parseKeyring(`a:${keyA}`));

  it('round-trips and never repeats a ciphertext', () => {
    const one = sealer.seal('secret', 'connection:1');
    const two = sealer.seal('secret', 'connection:1');
    expect(one).not.toBe(two);
    expect(one).not.toContain('secret');
    expect(sealer.open(one, 'connection:1')).toBe('secret');
  });

  it('refuses a blob moved to another record', () => {
    const blob = sealer.seal('secret', 'connection:1');
    expect(() => sealer.open(blob, 'connection:2')).toThrow(DecryptError);
  });

  it('refuses a tampered blob', () => {
    const blob = sealer.seal('secret', 'x');
    const tampered = `${blob.slice(0, -2)}${blob.endsWith('A') ? 'B' : 'A'}A`;
    expect(() => sealer.open(tampered, 'x')).toThrow(DecryptError);
  });

  it('keeps opening blobs of an old key after rotation, and says they are stale', () => {
    const old = sealer.seal('secret', 'x');
    const rotated = createSealer(parseKeyring(`b:${keyB},a:${keyA}`));
    expect(rotated.open(old, 'x')).toBe('secret');
    expect(rotated.isStale(old)).toBe(true);
    expect(rotated.isStale(rotated.seal('secret', 'x'))).toBe(false);
  });

  it('refuses a blob whose key is gone', () => {
    const old = sealer.seal('secret', 'x');
    const other = createSealer(parseKeyring(`b:${keyB}`));
    expect(() => other.open(old, 'x')).toThrow(/no key/);
  });

  describe('a sealed record whose tag is cut short', () => {
    const record = JSON.stringify({
      id: 'c1',
      tokens: { access_token: 'at', refresh_token: 'rt' },
    });
    const blob = sealer.seal(record, 'connection:s:c1');
    const truncate = (bytes: number) => {
      const [kid, iv, tag, ciphertext] = blob.split('.') as [string, string, string, string];
      const short = Buffer.from(tag, 'base64url').subarray(0, bytes).toString('base64url');
      return [kid, iv, short, ciphertext].join('.');
    };

    it('opens the whole 16-byte tag', () => {
      expect(sealer.open(truncate(16), 'connection:s:c1')).toBe(record);
    });

    it.each([12, 8, 4])('refuses a %i-byte tag', (bytes) => {
      expect(() => sealer.open(truncate(bytes), 'connection:s:c1')).toThrow(DecryptError);
    });
  });
});
