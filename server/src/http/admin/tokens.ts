/**
 * Admin tokens: made by `newAdminToken` (the CLI's `token` command prints the token once and the
 * entry to add to ADMIN_TOKENS_FILE), checked by `createAuthenticator`. The file, read at start-up
 * by config/, holds only each token's SHA-256.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import {
  ADMIN_NAME,
  parseAdminTokens,
  TOKEN_PREFIX,
  type AdminRole,
  type AdminTokenEntry,
} from '../../config/admin-tokens.ts';

export { parseAdminTokens, TOKEN_PREFIX } from '../../config/admin-tokens.ts';
export type { AdminRole, AdminTokenEntry } from '../../config/admin-tokens.ts';

/** 32 random bytes: as strong as the encryption keys, and no shorter than a session token. */
const TOKEN_BYTES = 32;

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** A new token for `name`, and the entry that lets it in (the token itself is nowhere else). */
export function newAdminToken(
  name: string,
  role: AdminRole,
): { token: string; entry: AdminTokenEntry } {
  if (!ADMIN_NAME.test(name))
    throw new Error(
      'a token name must be 1 to 64 letters, digits or . _ @ + : - (starting with a letter or digit)',
    );
  if (role !== 'viewer' && role !== 'operator')
    throw new Error('a token role must be "viewer" or "operator"');
  const token = `${TOKEN_PREFIX}${randomBytes(TOKEN_BYTES).toString('base64url')}`;
  return { token, entry: { name, role, sha256: sha256(token).toString('hex') } };
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), or undefined. */
const BEARER = /^bearer +([A-Za-z0-9_-]{1,256})$/i;

export type Authenticate = (authorization: string | undefined) => AdminTokenEntry | null;

/**
 * The entry whose token an Authorization header carries, or null. The header's token is hashed and
 * compared with every entry's hash, always all of them and in constant time (no early exit), so
 * how long an answer takes says nothing of which entry, if any, came close. `equal` is for tests,
 * which count the comparisons.
 */
export function createAuthenticator(
  entries: readonly AdminTokenEntry[],
  equal: (a: Buffer, b: Buffer) => boolean = timingSafeEqual,
): Authenticate {
  const digests = entries.map((entry) => ({ entry, digest: Buffer.from(entry.sha256, 'hex') }));
  return (authorization) => {
    const token = BEARER.exec(authorization ?? '')?.[1];
    // A malformed header is hashed and compared all the same: one path for every failure.
    const given = sha256(token ?? '');
    let found: AdminTokenEntry | null = null;
    for (const { entry, digest } of digests) {
      const same = equal(given, digest);
      if (same && found === null) found = entry;
    }
    return token === undefined ? null : found;
  };
}

/** How often, at most, a call looks whether ADMIN_TOKENS_FILE changed. */
export const TOKENS_CHECK_MS = 10_000;

/**
 * The authenticator of ADMIN_TOKENS_FILE, kept current: a call at most every TOKENS_CHECK_MS (on
 * the injected clock) looks at the file's modification time, size and inode, and reads it again
 * when they changed. So a token is added or revoked without a restart, within seconds of the file
 * changing (Kubernetes swaps a mounted Secret's files a minute or so after the Secret changes). A
 * file that cannot be read or is not valid leaves the tokens as they were, said in the log once per
 * change; config/ refused such a file at start-up.
 */
export function tokensFromFile(options: {
  path: string;
  entries: readonly AdminTokenEntry[];
  now: () => number;
  log: Logger;
}): Authenticate {
  const { path, now, log } = options;
  const signature = (): string => {
    try {
      const { mtimeMs, size, ino } = statSync(path);
      return `${mtimeMs}:${size}:${ino}`;
    } catch (error) {
      return `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
    }
  };
  let current = createAuthenticator(options.entries);
  let seen = signature();
  let checkedAt = now();
  const refresh = (): void => {
    checkedAt = now();
    const latest = signature();
    if (latest === seen) return;
    seen = latest;
    try {
      const entries = parseAdminTokens(readFileSync(path, 'utf8'));
      current = createAuthenticator(entries);
      log.info({ tokens: entries.length }, 'ADMIN_TOKENS_FILE changed: its tokens are in use now');
    } catch (error) {
      const problem = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      log.error(
        { problem },
        'ADMIN_TOKENS_FILE changed but cannot be used: the tokens read before stay in use',
      );
    }
  };
  return (authorization) => {
    if (now() - checkedAt >= TOKENS_CHECK_MS) refresh();
    return current(authorization);
  };
}
