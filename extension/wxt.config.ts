import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import type { Plugin } from 'vite';
import { defineConfig } from 'wxt';
import { DEFAULT_BROKER_URL, hostPermissionFor, parseBrokerUrl } from './src/broker-url.ts';
import { DEV_CHROME_PUBLIC_KEY } from './src/dev-identity.ts';
import { releaseSettings } from './src/release.ts';

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
  vite: () => ({ plugins: [zodWithoutEvalProbe()] }),
  manifest: ({ browser }) => ({
    name: '__MSG_extName__',
    description: '__MSG_extDescription__',
    default_locale: 'en',
    permissions: ['identity', 'storage'],
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
    // The extension imports @baton/shared from the workspace: a reviewer's sources zip needs
    // the workspace root (lockfile, base tsconfig, shared/), not just this package.
    sourcesRoot: '..',
    includeSources: [
      'package.json',
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'tsconfig.base.json',
      'LICENSE',
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
