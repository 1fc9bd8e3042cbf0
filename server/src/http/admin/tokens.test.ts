import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  createAuthenticator,
  newAdminToken,
  parseAdminTokens,
  TOKEN_PREFIX,
  TOKENS_CHECK_MS,
  tokensFromFile,
} from './tokens.ts';

describe('newAdminToken', () => {
  it('makes a recognisable token of 32 random bytes, and the entry that holds only its hash', () => {
    const { token, entry } = newAdminToken('alice', 'operator');
    expect(token).toMatch(/^batadm_[A-Za-z0-9_-]{43}$/);
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(entry).toEqual({
      name: 'alice',
      role: 'operator',
      sha256: createHash('sha256').update(token).digest('hex'),
    });
    expect(JSON.stringify(entry)).not.toContain(token.slice(TOKEN_PREFIX.length));
    // The entry is one the file parser accepts as it is.
    expect(parseAdminTokens(JSON.stringify([entry]))).toEqual([entry]);
  });

  it('makes a new token every time', () => {
    expect(newAdminToken('a', 'viewer').token).not.toBe(newAdminToken('a', 'viewer').token);
  });

  it('refuses a name that could not go into a log line, or a role that is not one', () => {
    expect(() => newAdminToken('two words', 'viewer')).toThrow(/token name must be/);
    expect(() => newAdminToken('', 'viewer')).toThrow(/token name must be/);
    expect(() => newAdminToken('root', 'admin' as 'viewer')).toThrow(/role must be/);
  });
});

describe('createAuthenticator', () => {
  const alice = newAdminToken('alice', 'operator');
  const bob = newAdminToken('bob', 'viewer');
  const carol = newAdminToken('carol', 'viewer');
  const entries = [alice.entry, bob.entry, carol.entry];

  it('answers the entry whose token the Bearer header carries, in any case of the scheme', () => {
    const authenticate = createAuthenticator(entries);
    expect(authenticate(`Bearer ${alice.token}`)).toEqual(alice.entry);
    expect(authenticate(`bearer ${bob.token}`)).toEqual(bob.entry);
    expect(authenticate(`BEARER ${carol.token}`)).toEqual(carol.entry);
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['another scheme', `Basic ${alice.token}`],
    ['the token alone', alice.token],
    ['a token one character off', `Bearer ${alice.token.slice(0, -1)}A`],
    ['the hash instead of the token', `Bearer ${alice.entry.sha256}`],
    ['a token with a trailing space', `Bearer ${alice.token} `],
    ['two tokens', `Bearer ${alice.token} ${bob.token}`],
  ])('answers null for %s', (_what, header) => {
    expect(createAuthenticator(entries)(header)).toBeNull();
  });

  it('compares with every entry, in constant time, whichever matches and whether any does', () => {
    const compared: string[] = [];
    const equal = (a: Buffer, b: Buffer) => {
      compared.push(b.toString('hex'));
      return timingSafeEqual(a, b);
    };
    const authenticate = createAuthenticator(entries, equal);
    const everyEntry = entries.map((entry) => entry.sha256);
    for (const header of [
      `Bearer ${alice.token}`,
      `Bearer ${carol.token}`,
      `Bearer ${TOKEN_PREFIX}unknown`,
      'garbage',
      undefined,
    ]) {
      compared.length = 0;
      authenticate(header);
      expect(compared, String(header).slice(0, 12)).toEqual(everyEntry);
    }
  });

  it('lets nobody in when the file lists nobody', () => {
    expect(createAuthenticator([])(`Bearer ${alice.token}`)).toBeNull();
  });
});

describe('tokensFromFile', () => {
  const folder = mkdtempSync(join(tmpdir(), 'baton-admin-tokens-'));
  const alice = newAdminToken('alice', 'operator');
  const bob = newAdminToken('bob', 'viewer');

  function setUp() {
    const path = join(folder, `tokens-${randomUUID()}.json`);
    writeFileSync(path, JSON.stringify([alice.entry]));
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const clock = { now: 0 };
    const authenticate = tokensFromFile({
      path,
      entries: [alice.entry],
      now: () => clock.now,
      log,
    });
    /** The file rewritten, its modification time moved on (a second may not have passed). */
    const rewrite = (content: string) => {
      writeFileSync(path, content);
      const later = new Date(Date.now() + 60_000);
      utimesSync(path, later, later);
    };
    return { authenticate, clock, rewrite, lines };
  }

  it('takes a change of the file within TOKENS_CHECK_MS: a token added, another revoked', () => {
    const { authenticate, clock, rewrite, lines } = setUp();
    expect(authenticate(`Bearer ${alice.token}`)).toEqual(alice.entry);
    rewrite(JSON.stringify([bob.entry]));
    // Not looked at again before the interval is over.
    clock.now += TOKENS_CHECK_MS - 1;
    expect(authenticate(`Bearer ${alice.token}`)).toEqual(alice.entry);
    clock.now += 1;
    expect(authenticate(`Bearer ${alice.token}`)).toBeNull();
    expect(authenticate(`Bearer ${bob.token}`)).toEqual(bob.entry);
    expect(lines.join('')).toContain('its tokens are in use now');
  });

  it('keeps the tokens it had when the changed file is not valid, and says so without the content', () => {
    const { authenticate, clock, rewrite, lines } = setUp();
    rewrite(`[{"name":"bob","role":"viewer","sha256":"${bob.token}"}]`);
    clock.now += TOKENS_CHECK_MS;
    expect(authenticate(`Bearer ${alice.token}`)).toEqual(alice.entry);
    expect(authenticate(`Bearer ${bob.token}`)).toBeNull();
    expect(lines.join('')).toContain('cannot be used');
    expect(lines.join('')).not.toContain(bob.token);
  });
});
