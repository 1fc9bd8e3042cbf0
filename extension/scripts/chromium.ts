import { createRequire } from 'node:module';
import type * as Playwright from '../../test/node_modules/playwright-core/index.js';

/**
 * playwright-core lives in the @baton/test workspace (the extension does not depend on it), and
 * drives Debian's Chromium: no browser download.
 */
const require = createRequire(new URL('../../test/package.json', import.meta.url));
const { chromium } = require('playwright-core') as typeof Playwright;

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Playwright.Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

export function launchWithExtension(
  userDataDir: string,
  extensionDir: string,
  options: {
    env?: Record<string, string>;
    args?: string[];
    colorScheme?: 'light' | 'dark';
    deviceScaleFactor?: number;
  } = {},
): Promise<Playwright.BrowserContext> {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      ...CHROMIUM_ARGS,
      `--disable-extensions-except=${extensionDir}`,
      `--load-extension=${extensionDir}`,
      ...(options.args ?? []),
    ],
    ...(options.env !== undefined && {
      env: { ...process.env, ...options.env } as Record<string, string>,
    }),
    ...(options.colorScheme !== undefined && { colorScheme: options.colorScheme }),
    ...(options.deviceScaleFactor !== undefined && {
      deviceScaleFactor: options.deviceScaleFactor,
    }),
  });
}

export type { Playwright };
