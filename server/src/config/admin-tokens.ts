/**
 * ADMIN_TOKENS_FILE: who may call the admin API (http/admin/), as a JSON array of
 * `{ "name": "...", "role": "viewer" | "operator", "sha256": "<hex SHA-256 of the token>" }`.
 * The file holds hashes only, so reading it gives nobody a token; still, no problem message ever
 * quotes a hash or a value that could be a token: only the entry's place and its name.
 */

export type AdminRole = 'viewer' | 'operator';
export const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'operator'];

export interface AdminTokenEntry {
  /** Who holds the token: logged with every call, named in admin.action events. */
  name: string;
  role: AdminRole;
  /** Lower-case hex SHA-256 of the token. */
  sha256: string;
}

/** A name safe to put in a log line or an event: no spaces, quotes or control characters. */
export const ADMIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+:-]{0,63}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** More than any team has operators: a file this long is a mistake (or not this file). */
const MAX_ENTRIES = 1000;
const FIELDS = new Set(['name', 'role', 'sha256']);

/**
 * The entries of an ADMIN_TOKENS_FILE's text, or an Error naming every problem found (each entry by
 * its place and, when it has a usable one, its name).
 */
export function parseAdminTokens(text: string): AdminTokenEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the text around the fault: it could be a token.
    throw new Error('is not valid JSON (a JSON array of { name, role, sha256 } entries)');
  }
  if (!Array.isArray(parsed))
    throw new Error('must hold a JSON array of { name, role, sha256 } entries');
  if (parsed.length === 0)
    throw new Error('lists no token: nobody could call the admin API (make one: admin token)');
  if (parsed.length > MAX_ENTRIES) throw new Error(`lists more than ${MAX_ENTRIES} tokens`);
  const problems: string[] = [];
  const entries: AdminTokenEntry[] = [];
  parsed.forEach((raw: unknown, index) => {
    const entry = checkEntry(raw, `entry ${index + 1}`, problems);
    if (entry) entries.push(entry);
  });
  const firstOf = new Map<string, number>();
  entries.forEach(({ name }, index) => {
    if (firstOf.has(name)) problems.push(`names "${name}" more than once: names must be unique`);
    else firstOf.set(name, index);
  });
  const hashes = new Map<string, string>();
  for (const { name, sha256 } of entries) {
    const other = hashes.get(sha256);
    if (other !== undefined && other !== name)
      problems.push(`gives "${other}" and "${name}" the same token: each needs a token of its own`);
    hashes.set(sha256, name);
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  return entries;
}

function checkEntry(raw: unknown, at: string, problems: string[]): AdminTokenEntry | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${at} is not an object { name, role, sha256 }`);
    return undefined;
  }
  const { name, role, sha256 } = raw as Record<string, unknown>;
  const named = typeof name === 'string' && ADMIN_NAME.test(name) ? name : undefined;
  const where = named === undefined ? at : `${at} ("${named}")`;
  const before = problems.length;
  if (named === undefined)
    problems.push(
      `${at}: name must be 1 to 64 letters, digits or . _ @ + : - (starting with a letter or digit)`,
    );
  if (role !== 'viewer' && role !== 'operator')
    problems.push(`${where}: role must be "viewer" or "operator"`);
  if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256))
    problems.push(
      typeof sha256 === 'string' && sha256.startsWith(TOKEN_PREFIX)
        ? `${where}: sha256 holds a token, not its hash: keep the token out of this file`
        : `${where}: sha256 must be 64 lower-case hexadecimal characters, the SHA-256 of the token`,
    );
  const unknown = Object.keys(raw).filter((key) => !FIELDS.has(key));
  if (unknown.length > 0)
    problems.push(
      `${where}: has ${unknown.length === 1 ? 'a field' : 'fields'} other than name, role and sha256`,
    );
  if (problems.length > before || named === undefined) return undefined;
  return { name: named, role: role as AdminRole, sha256: sha256 as string };
}

/** What every admin token starts with, so that a leaked one is recognised (and scanned for). */
export const TOKEN_PREFIX = 'batadm_';
