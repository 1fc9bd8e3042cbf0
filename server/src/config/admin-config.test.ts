import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAdminTokens, TOKEN_PREFIX } from './admin-tokens.ts';
import { ConfigError, loadConfig } from './config.ts';

const hash = (token: string) => createHash('sha256').update(token).digest('hex');
const ALICE = { name: 'alice', role: 'operator', sha256: hash('batadm_alice') };
const BOB = { name: 'bob@example.com', role: 'viewer', sha256: hash('batadm_bob') };

const folder = mkdtempSync(join(tmpdir(), 'baton-admin-config-'));
let files = 0;
/** A tokens file holding `content` (JSON unless a string). */
function tokensFile(content: unknown): string {
  const path = join(folder, `tokens-${files++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const problems = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ LOG_LEVEL: 'silent', ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('ADMIN_PORT and ADMIN_TOKENS_FILE', () => {
  it('leave the admin API off while ADMIN_PORT is unset', () => {
    expect(loadConfig({}).admin).toBeUndefined();
    // A tokens file alone turns nothing on (the CLI may be pointed at it).
    expect(loadConfig({ ADMIN_TOKENS_FILE: '/nonexistent' }).admin).toBeUndefined();
  });

  it('read the port and every entry of the tokens file at start-up', () => {
    const file = tokensFile([ALICE, BOB]);
    const config = loadConfig({ ADMIN_PORT: '9465', ADMIN_TOKENS_FILE: file });
    expect(config.admin).toEqual({ port: 9465, tokensFile: file, tokens: [ALICE, BOB] });
  });

  it('refuse ADMIN_PORT without ADMIN_TOKENS_FILE, saying why', () => {
    expect(problems({ ADMIN_PORT: '9465' })).toEqual([
      expect.stringMatching(/^ADMIN_TOKENS_FILE is required when ADMIN_PORT is set/),
    ]);
  });

  it('refuse a tokens file that cannot be read, naming its path and the reason', () => {
    expect(problems({ ADMIN_PORT: '9465', ADMIN_TOKENS_FILE: join(folder, 'missing') })).toEqual([
      `ADMIN_TOKENS_FILE names a file that cannot be read (ENOENT): ${join(folder, 'missing')}`,
    ]);
  });

  it('refuse an ADMIN_PORT equal to PORT or METRICS_PORT', () => {
    const file = tokensFile([ALICE]);
    expect(problems({ ADMIN_PORT: '8787', ADMIN_TOKENS_FILE: file })).toEqual([
      'ADMIN_PORT must differ from PORT (8787): the admin API has a listener of its own',
    ]);
    expect(problems({ ADMIN_PORT: '9464', METRICS_PORT: '9464', ADMIN_TOKENS_FILE: file })).toEqual(
      ['ADMIN_PORT must differ from METRICS_PORT (9464): the admin API has a listener of its own'],
    );
    // Port 0 (any free port, as tests listen) is never the same port.
    expect(problems({ ADMIN_PORT: '0', PORT: '0', ADMIN_TOKENS_FILE: file })).toEqual([]);
  });

  it('refuse a port that is not one', () => {
    expect(problems({ ADMIN_PORT: '70000', ADMIN_TOKENS_FILE: tokensFile([ALICE]) })).toEqual([
      expect.stringMatching(/^ADMIN_PORT /),
    ]);
  });

  it('name the file in a problem with its content', () => {
    const file = tokensFile([{ ...ALICE, role: 'admin' }]);
    expect(problems({ ADMIN_PORT: '9465', ADMIN_TOKENS_FILE: file })).toEqual([
      `ADMIN_TOKENS_FILE (${file}) entry 1 ("alice"): role must be "viewer" or "operator"`,
    ]);
  });
});

describe('parseAdminTokens', () => {
  const refusal = (content: unknown): string => {
    try {
      parseAdminTokens(typeof content === 'string' ? content : JSON.stringify(content));
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('accepted');
  };

  it.each([
    ['not JSON', `[{"name": "a", "sha256": "${'ab'.repeat(32)}"`, /^is not valid JSON/],
    ['not an array', { tokens: [ALICE] }, /^must hold a JSON array/],
    ['an empty array', [], /^lists no token/],
    ['an entry that is not an object', [ALICE, 'x'], /^entry 2 is not an object/],
    ['a name with a space', [{ ...ALICE, name: 'a b' }], /^entry 1: name must be 1 to 64/],
    ['a name too long', [{ ...ALICE, name: 'a'.repeat(65) }], /^entry 1: name must be/],
    ['no role', [{ name: 'x', sha256: ALICE.sha256 }], /^entry 1 \("x"\): role must be/],
    ['a hash too short', [{ ...ALICE, sha256: 'abc' }], /sha256 must be 64 lower-case hex/],
    ['an upper-case hash', [{ ...ALICE, sha256: ALICE.sha256.toUpperCase() }], /sha256 must be/],
    ['an unknown field', [{ ...ALICE, token: 'x' }], /^entry 1 \("alice"\): has a field other/],
    ['a name twice', [ALICE, { ...BOB, name: 'alice' }], /^names "alice" more than once/],
    ['one token for two names', [ALICE, { ...BOB, sha256: ALICE.sha256 }], /the same token/],
  ])('refuses %s', (_what, content, expected) => {
    expect(refusal(content)).toMatch(expected);
  });

  it('names every problem of every entry at once', () => {
    const message = refusal([{ name: '' }, { ...BOB, role: 'root' }]);
    expect(message.split('; ')).toEqual([
      expect.stringMatching(/^entry 1: name must be/),
      'entry 1: role must be "viewer" or "operator"',
      expect.stringMatching(/^entry 1: sha256 must be/),
      'entry 2 ("bob@example.com"): role must be "viewer" or "operator"',
    ]);
  });

  it('never quotes a hash, or a token put where its hash belongs', () => {
    const token = `${TOKEN_PREFIX}${'s'.repeat(43)}`;
    const message = refusal([{ ...ALICE, sha256: token }, { ...BOB, sha256: ALICE.sha256 }, BOB]);
    expect(message).toContain('sha256 holds a token, not its hash');
    expect(message).not.toContain(token);
    expect(message).not.toContain(ALICE.sha256);
    expect(refusal(`[{"sha256": "${ALICE.sha256}"`)).not.toContain(ALICE.sha256);
  });
});
