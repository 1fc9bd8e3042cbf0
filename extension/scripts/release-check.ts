/**
 * Opens the release zips `pnpm release` made under .output/ and checks them as the stores will:
 * no development `key`, the given Firefox add-on id, the https broker as the one host permission,
 * content scripts for WXT_API_ORIGINS only and none of the end-to-end tests' (BATON_E2E),
 * every `__MSG_…__` of the manifest resolved in en, fr and nl, the build version (the zips' names,
 * Chrome's `version_name`; the manifest's `version` its X.Y.Z: scripts/version.ts), and
 * `web-ext lint` clean on the Firefox package. Prints the sizes. Run with the build variables:
 *   WXT_BROKER_URL=https://… WXT_GECKO_ID=… node scripts/release-check.ts [<folder of the zips>]
 */
import { execFileSync } from 'node:child_process';
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import { matchPatternAllowed } from '../src/api-origins.ts';
import { hostPermissionFor } from '../src/broker-url.ts';
import { releaseSettings } from '../src/release.ts';
import { currentBuildVersion, manifestVersion } from '../../scripts/version.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Where the zips are: .output/, or the folder given (`pnpm release` builds them apart). */
const output = process.argv[2] ?? join(root, '.output');
const { name } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string };
/** What the zips are named after, and Chrome's `version_name` unless it is a release's X.Y.Z. */
const buildVersion = currentBuildVersion();
const version = manifestVersion(buildVersion);
const { brokerUrl, geckoId, apiOrigins } = releaseSettings(process.env);
const problems: string[] = [];
const check = (ok: boolean, problem: string) => {
  if (!ok) problems.push(problem);
};

const zipNamed = (suffix: string): string => {
  const found = readdirSync(output).find((file) => file.endsWith(`-${buildVersion}-${suffix}.zip`));
  if (found === undefined) throw new Error(`no *-${buildVersion}-${suffix}.zip in ${output}`);
  return join(output, found);
};

type Manifest = Record<string, unknown> & {
  key?: string;
  version?: string;
  version_name?: string;
  host_permissions?: string[];
  optional_host_permissions?: string[];
  content_scripts?: { matches?: string[]; js?: string[] }[];
  browser_specific_settings?: { gecko?: { id?: string; data_collection_permissions?: unknown } };
};

function inspect(label: 'chrome' | 'firefox'): Record<string, Uint8Array> {
  const zip = zipNamed(label);
  const files = unzipSync(readFileSync(zip));
  const text = (path: string) => new TextDecoder().decode(files[path]);
  const manifest = JSON.parse(text('manifest.json')) as Manifest;
  check(manifest.key === undefined, `${label}: the manifest carries the development key`);
  check(manifest.version === version, `${label}: version ${manifest.version} is not ${version}`);
  // Firefox has no version_name (WXT leaves it out); Chrome shows it, when it says more.
  const versionName = label === 'chrome' && buildVersion !== version ? buildVersion : undefined;
  check(
    manifest.version_name === versionName,
    `${label}: version_name ${manifest.version_name} is not ${versionName}`,
  );
  check(
    JSON.stringify(manifest.host_permissions) === JSON.stringify([hostPermissionFor(brokerUrl)]),
    `${label}: host_permissions ${JSON.stringify(manifest.host_permissions)} are not the broker's alone`,
  );
  check(
    [...(manifest.host_permissions ?? []), ...(manifest.optional_host_permissions ?? [])].every(
      (pattern) => pattern.startsWith('https://'),
    ),
    `${label}: a host permission is not https`,
  );
  // Content scripts only for the listed origins (WXT_API_ORIGINS), and never the tests' own.
  const outside = (manifest.content_scripts ?? [])
    .flatMap((script) => script.matches ?? [])
    .filter((pattern) => !matchPatternAllowed(pattern, apiOrigins));
  check(outside.length === 0, `${label}: content scripts match beyond WXT_API_ORIGINS: ${outside}`);
  const testOnly = Object.keys(files).filter((path) => /baton-e2e|testing\//.test(path));
  check(testOnly.length === 0, `${label}: test-only files inside: ${testOnly.join(', ')}`);
  for (const locale of ['en', 'fr', 'nl']) {
    const path = `_locales/${locale}/messages.json`;
    if (files[path] === undefined) {
      problems.push(`${label}: ${path} is missing`);
      continue;
    }
    const messages = JSON.parse(text(path)) as Record<string, unknown>;
    for (const [, key] of JSON.stringify(manifest).matchAll(/__MSG_(\w+)__/g))
      check(key !== undefined && key in messages, `${label}: __MSG_${key}__ is not in ${path}`);
  }
  if (label === 'firefox') {
    const gecko = manifest.browser_specific_settings?.gecko;
    check(gecko?.id === geckoId, `firefox: gecko id ${gecko?.id} is not ${geckoId}`);
    check(
      gecko?.data_collection_permissions !== undefined,
      'firefox: no data_collection_permissions',
    );
  }
  console.log(`${label}: ${zip} (${(statSync(zip).size / 1024).toFixed(0)} KiB)`);
  return files;
}

inspect('chrome');
const firefox = inspect('firefox');
const sources = zipNamed('sources');
const sourceFiles = Object.keys(unzipSync(readFileSync(sources)));
// A reviewer rebuilds from these: the workspace's lockfile, the shared package and the extension.
for (const needed of ['pnpm-lock.yaml', 'shared/src/index.ts', 'extension/wxt.config.ts'])
  check(sourceFiles.includes(needed), `sources: ${needed} is missing`);
check(!sourceFiles.some((file) => file.includes('node_modules/')), 'sources: node_modules inside');
console.log(`sources: ${sources} (${(statSync(sources).size / 1024).toFixed(0)} KiB)`);

// web-ext lints a folder: the Firefox package, unpacked as the store will.
const unpacked = mkdtempSync(join(tmpdir(), `${name.replace(/\W/g, '-')}-lint-`));
try {
  for (const [path, bytes] of Object.entries(firefox)) {
    if (path.endsWith('/')) continue;
    mkdirSync(dirname(join(unpacked, path)), { recursive: true });
    writeFileSync(join(unpacked, path), bytes);
  }
  execFileSync(
    'pnpm',
    ['exec', 'web-ext', 'lint', '--source-dir', unpacked, '--warnings-as-errors'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
} catch {
  problems.push('firefox: web-ext lint is not clean');
} finally {
  rmSync(unpacked, { recursive: true, force: true });
}

if (problems.length > 0) {
  console.error(`The release zips are not ready:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
console.log('release zips: ok');
