import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'vite';
import { defineConfig } from 'wxt';
import {
  contentScriptsProblem,
  DEVELOPMENT_API_ORIGINS,
  formatApiOrigins,
  mergeApiOrigins,
  parseApiOrigins,
  type ApiOrigin,
} from './src/api-origins.ts';
import { DEFAULT_BROKER_URL, hostPermissionFor, parseBrokerUrl } from './src/broker-url.ts';
import { DEV_CHROME_PUBLIC_KEY } from './src/dev-identity.ts';
import { releaseSettings } from './src/release.ts';
import { currentBuildVersion } from '../scripts/version.ts';

/**
 * The version a build reports (scripts/version.ts, docs/releasing.md): the workspace's, and
 * between releases `+<short revision>` after it (`1.1.0-dev+abc1234`). A manifest's `version` may
 * hold 1 to 4 integers only: WXT derives it from `version_name` (`1.1.0`), and keeps `version_name`
 * for Chrome, which shows it; Firefox has no such key, so there the zips' names carry it.
 */
const buildVersion = currentBuildVersion();

/** The broker at build time; an invalid WXT_BROKER_URL fails the build instead of shipping. */
function buildBrokerUrl(): string {
  const raw = process.env['WXT_BROKER_URL'] ?? DEFAULT_BROKER_URL;
  const parsed = parseBrokerUrl(raw);
  if (!parsed.ok) {
    throw new Error(
      `WXT_BROKER_URL=${JSON.stringify(raw)} is not a valid broker URL (${parsed.problem})`,
    );
  }
  return parsed.url;
}

/**
 * A store build (BATON_RELEASE=1, `pnpm release`): the broker and the Firefox add-on id come from
 * build variables and are checked first (release.ts); no development `key`, no plain-http
 * permission. A development build keeps the pinned ids the tests rely on.
 */
const release = process.env['BATON_RELEASE'] === '1' ? releaseSettings(process.env) : null;
const brokerUrl = release?.brokerUrl ?? buildBrokerUrl();

/**
 * The origins whose content scripts may use the API (docs/extending.md): WXT_API_ORIGINS (none
 * when unset), and in a development build the machine's own pages too (http://localhost and
 * http://127.0.0.1, any port), so that `scripts/baton start` and the end-to-end tests keep working
 * beside the integrator's list. A release build answers WXT_API_ORIGINS alone, https only.
 */
function buildApiOrigins(): readonly ApiOrigin[] {
  const parsed = parseApiOrigins(process.env['WXT_API_ORIGINS']);
  if (!parsed.ok)
    throw new Error(
      `WXT_API_ORIGINS is not valid:\n${parsed.problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  return mergeApiOrigins(parsed.origins, DEVELOPMENT_API_ORIGINS);
}
const apiOrigins = release?.apiOrigins ?? buildApiOrigins();

/**
 * The end-to-end tests' build (BATON_E2E=1, test/e2e/global-setup.ts) adds content scripts made
 * only for them: src/testing/api-probe.content.ts, declared on an unlisted origin too, on purpose
 * (the tests prove that the background refuses it there), and src/testing/storage-probe.content.ts
 * on the listed origin (it reads and writes the storage a content script can reach). Never in a
 * store build.
 */
const E2E_PROBE = 'baton-e2e-api-probe';
const E2E_STORAGE_PROBE = 'baton-e2e-storage-probe';
const e2e = process.env['BATON_E2E'] === '1';
if (e2e && release !== null)
  throw new Error('BATON_E2E=1 adds a test-only content script: never in a release build.');

/**
 * Content scripts are declared for the listed origins only: a match pattern beyond them fails the
 * build, rather than injecting a script whose every call the background would refuse.
 */
function checkContentScripts(manifest: {
  content_scripts?: readonly { js?: readonly string[]; matches?: readonly string[] }[];
}): void {
  const scripts = (manifest.content_scripts ?? [])
    .filter((script) => !(e2e && script.js?.includes(`content-scripts/${E2E_PROBE}.js`)))
    .map((script) => ({ file: script.js?.join(', ') ?? '', matches: script.matches ?? [] }));
  const problem = contentScriptsProblem(scripts, apiOrigins, {
    release: release !== null,
    listed: process.env['WXT_API_ORIGINS'],
  });
  if (problem !== null) throw new Error(problem);
}

/**
 * zod (through @baton/shared's schemas) probes whether it may compile validators with
 * `Function("")`. An MV3 extension's CSP forbids that anyway, so the probe can only fail (and be
 * reported as a CSP violation); web-ext lint also flags it as DANGEROUS_EVAL. The probe is
 * replaced by its only possible answer. The build fails if zod changes and the probe moves.
 */
function zodWithoutEvalProbe(): Plugin {
  const probe = /const F = Function;\s*new F\(""\);\s*return true;/;
  return {
    name: 'baton:zod-without-eval-probe',
    transform(code, id) {
      if (!/[\\/]zod[\\/]v4[\\/]core[\\/]util\.js$/.test(id)) return null;
      if (!probe.test(code))
        this.error('zod allowsEval probe not found: update zodWithoutEvalProbe');
      return { code: code.replace(probe, 'return false;'), map: null };
    },
  };
}

export default defineConfig({
  modules: ['@wxt-dev/webextension-polyfill'],
  vite: () => ({
    plugins: [zodWithoutEvalProbe()],
    // The background answers the list checked here (build-env.ts), not WXT_API_ORIGINS as Vite
    // would read it: the development origins are added, and an .env file cannot differ from it.
    define: { 'import.meta.env.WXT_API_ORIGINS': JSON.stringify(formatApiOrigins(apiOrigins)) },
  }),
  hooks: {
    'entrypoints:found': (_wxt, infos) => {
      if (!e2e) return;
      infos.push(
        {
          name: E2E_PROBE,
          inputPath: fileURLToPath(new URL('./src/testing/api-probe.content.ts', import.meta.url)),
          type: 'content-script',
        },
        {
          name: E2E_STORAGE_PROBE,
          inputPath: fileURLToPath(
            new URL('./src/testing/storage-probe.content.ts', import.meta.url),
          ),
          type: 'content-script',
        },
      );
    },
    'build:manifestGenerated': (_wxt, manifest) => checkContentScripts(manifest),
  },
  manifest: ({ browser }) => ({
    name: '__MSG_extName__',
    version_name: buildVersion,
    description: '__MSG_extDescription__',
    default_locale: 'en',
    // alarms: the status check that keeps the toolbar badge true (src/background/status-check.ts).
    permissions: ['identity', 'storage', 'alarms'],
    host_permissions: [hostPermissionFor(brokerUrl)],
    // Another broker, chosen on the options page, is requested at run time.
    optional_host_permissions: release
      ? ['https://*/*']
      : ['https://*/*', 'http://localhost/*', 'http://127.0.0.1/*'],
    action: { default_title: '__MSG_extName__' },
    ...(browser === 'firefox'
      ? {
          browser_specific_settings: {
            gecko: {
              id: release?.geckoId ?? DEV_FIREFOX_GECKO_ID,
              // MV3 background scripts, identity.launchWebAuthFlow, storage.session,
              // optional_host_permissions and data_collection_permissions (140) all present.
              strict_min_version: '140.0',
              // What the extension makes travel off the device (Mozilla's taxonomy): the session
              // token and the sign-in's one-time codes go to the integrator's broker
              // (authenticationInfo), and through it the user's name and e-mail address come back
              // from the provider to be shown (personallyIdentifyingInfo). docs/privacy.md.
              data_collection_permissions: {
                required: ['authenticationInfo', 'personallyIdentifyingInfo'],
              },
            },
            // Firefox for Android gained data_collection_permissions in 142.
            gecko_android: { strict_min_version: '142.0' },
          },
        }
      : {
          // What an administrator may set by policy (storage.managed; docs/administrators.md).
          // Firefox reads its policies without a schema.
          storage: { managed_schema: 'managed_schema.json' },
          // The Chrome Web Store refuses a manifest with a key: it gives the id itself. A
          // development build pins its id (see @baton/shared dev-extension.ts).
          ...(release ? {} : { key: DEV_CHROME_PUBLIC_KEY }),
        }),
  }),
  zip: {
    artifactTemplate: `{{name}}-${buildVersion}-{{browser}}.zip`,
    sourcesTemplate: `{{name}}-${buildVersion}-sources.zip`,
    // The extension imports @baton/shared from the workspace: a reviewer's sources zip needs
    // the workspace root (lockfile, base tsconfig, shared/), not just this package.
    sourcesRoot: '..',
    includeSources: [
      'package.json',
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'tsconfig.base.json',
      'LICENSE',
      'scripts/version.ts',
      'shared/**',
      'extension/**',
    ],
    excludeSources: [
      '**/node_modules/**',
      '**/.output/**',
      '**/.wxt/**',
      '**/test-results/**',
      'test/**',
      'server/**',
      '.ci/**',
    ],
  },
});
