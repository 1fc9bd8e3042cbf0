import { chromium, type Browser, type BrowserContext } from 'playwright-core';

/** playwright-core (a devDependency of its own) drives Debian's Chromium: no browser download. */

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

export function launchChromium(): Promise<Browser> {
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
): Promise<BrowserContext> {
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

export type * as Playwright from 'playwright-core';
