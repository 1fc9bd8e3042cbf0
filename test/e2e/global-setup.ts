import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { onPath } from '../support/require-tools.ts';
import { freePort } from '../support/ports.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    brokerPort: number;
  }
}

const extensionDir = fileURLToPath(new URL('../../extension/', import.meta.url));
/** Where the tests' integrator pages are served (test/support/integrator-page.ts). */
const TEST_ORIGIN = 'http://127.0.0.1';

/**
 * The extension talks to the broker it was built for: pick the broker's port now, build both
 * browsers' extensions for it once, and hand the port to the tests. The build is the end-to-end
 * one (BATON_E2E=1): it carries the probe content scripts of api.test.ts and storage.test.ts,
 * declared on pages under /baton-e2e/ only, and lists 127.0.0.1 (every port) as an API origin,
 * besides those WXT_API_ORIGINS lists.
 */
export default async function setup(project: TestProject): Promise<void> {
  const missing = ['chromium', 'firefox-esr'].filter((browser) => !onPath(browser));
  if (missing.length > 0)
    throw new Error(
      `End-to-end tests need ${missing.join(' and ')}: apt-get install ${missing.join(' ')} (or run bash .ci/run).`,
    );
  const port = await freePort();
  const env = e2eBuildEnv(port);
  for (const script of ['build', 'build:firefox']) {
    await promisify(execFile)('pnpm', ['run', script], { cwd: extensionDir, env });
  }
  project.provide('brokerPort', port);
}

/**
 * The environment of the end-to-end build, for the broker on `brokerPort`: the tests' origin,
 * http://127.0.0.1 (any port), added to the origins the integrator lists in WXT_API_ORIGINS, so
 * that a fork with content scripts of its own builds for the tests as it does for itself.
 */
export function e2eBuildEnv(
  brokerPort: number,
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const listed = env['WXT_API_ORIGINS']?.trim() ?? '';
  return {
    ...env,
    WXT_BROKER_URL: `http://127.0.0.1:${brokerPort}`,
    WXT_API_ORIGINS: [listed, TEST_ORIGIN].filter((entry) => entry !== '').join(','),
    BATON_E2E: '1',
  };
}
