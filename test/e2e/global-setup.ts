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

/**
 * The extension talks to the broker it was built for: pick the broker's port now, build both
 * browsers' extensions for it once, and hand the port to the tests. The build is the end-to-end
 * one (BATON_E2E=1): it carries the probe content script of api.test.ts, declared on pages under
 * /baton-e2e/ only, and lists 127.0.0.1 (every port) as the API's origin.
 */
export default async function setup(project: TestProject): Promise<void> {
  const missing = ['chromium', 'firefox-esr'].filter((browser) => !onPath(browser));
  if (missing.length > 0)
    throw new Error(
      `End-to-end tests need ${missing.join(' and ')}: apt-get install ${missing.join(' ')} (or run bash .ci/run).`,
    );
  const port = await freePort();
  const env = {
    ...process.env,
    WXT_BROKER_URL: `http://127.0.0.1:${port}`,
    WXT_API_ORIGINS: 'http://127.0.0.1',
    BATON_E2E: '1',
  };
  for (const script of ['build', 'build:firefox']) {
    await promisify(execFile)('pnpm', ['run', script], { cwd: extensionDir, env });
  }
  project.provide('brokerPort', port);
}
