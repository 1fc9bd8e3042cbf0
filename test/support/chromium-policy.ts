import { createHash, generateKeyPairSync, randomUUID } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Chromium's organisation policy, as an administrator on Linux sets it: a JSON file in
 * `/etc/chromium/policies/managed/`, whose `3rdparty.extensions.<id>` Chromium hands to that
 * extension's `storage.managed` (docs/administrators.md). Chromium reads policies from that system
 * folder only, so writing one takes root; CI runs as root.
 */
export const CHROMIUM_POLICY_DIR = '/etc/chromium/policies/managed';

/** The built extension under an identity of its own: a copy whose manifest has a fresh `key`. */
export interface FreshExtension extends AsyncDisposable {
  readonly dir: string;
  readonly id: string;
  /** `identity.getRedirectURL()` of that id, for the broker's EXTENSION_REDIRECT_URLS. */
  readonly redirectUrl: string;
}

/**
 * A copy of the Chrome build with a key nobody else uses. A policy file applies to every Chromium
 * of the machine: under the development id it would also reach the extension in other test runs
 * on the same machine; under this id, only this copy.
 */
export async function freshExtension(builtDir: string): Promise<FreshExtension> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-policy-extension-'));
  await cp(builtDir, dir, { recursive: true });
  const der = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
    type: 'spki',
    format: 'der',
  });
  const manifestPath = join(dir, 'manifest.json');
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>;
  await writeFile(manifestPath, JSON.stringify({ ...manifest, key: der.toString('base64') }));
  // Chrome's id: the first 32 hex characters of the key's SHA-256, 0-f written as a-p.
  const hex = createHash('sha256').update(der).digest('hex').slice(0, 32);
  const id = [...hex].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
  return {
    dir,
    id,
    redirectUrl: `https://${id}.chromiumapp.org/`,
    [Symbol.asyncDispose]: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes the organisation's settings for extension `id` as a policy file of its own (a unique
 * name), and removes it, and any folder it had to create, when disposed. Fails, saying so, where
 * the system folder cannot be written: the test then has no policy to check, and must not pass.
 */
export async function writeChromiumPolicy(
  id: string,
  settings: Record<string, unknown>,
): Promise<AsyncDisposable & { readonly path: string }> {
  const created = await makeFolders(CHROMIUM_POLICY_DIR);
  const path = join(CHROMIUM_POLICY_DIR, `baton-e2e-${randomUUID()}.json`);
  try {
    await writeFile(path, JSON.stringify({ '3rdparty': { extensions: { [id]: settings } } }));
  } catch (error) {
    await removeFolders(created);
    throw notWritable(error);
  }
  return {
    path,
    async [Symbol.asyncDispose]() {
      await rm(path, { force: true });
      await removeFolders(created);
    },
  };
}

/** `mkdir -p`, returning the folders it created, deepest first. */
async function makeFolders(folder: string): Promise<string[]> {
  let first: string | undefined;
  try {
    first = await mkdir(folder, { recursive: true });
  } catch (error) {
    throw notWritable(error);
  }
  const created: string[] = [];
  for (let at = folder; first !== undefined && at.length >= first.length; at = dirname(at))
    created.push(at);
  return created;
}

/** Removes the folders this run created, if nothing else has been put in them meanwhile. */
async function removeFolders(created: readonly string[]): Promise<void> {
  for (const folder of created) {
    try {
      await rmdir(folder);
    } catch {
      return; // not empty: someone else's policy is in it now
    }
  }
}

function notWritable(error: unknown): Error {
  const code = (error as { code?: unknown } | null)?.code;
  return new Error(
    `Chromium's policy test writes ${CHROMIUM_POLICY_DIR}/, a system folder (${String(code)}): ` +
      'run the e2e suite as root (CI does), or with write access to that folder.',
    { cause: error },
  );
}
