/**
 * Loads the Firefox build (.output/firefox-mv3) into headless Firefox ESR (puppeteer-core, WebDriver BiDi, no geckodriver) and checks, through the options
 * page, that identity.getRedirectURL() is the development redirect URL in @baton/shared.
 *
 *   pnpm --filter @baton/extension build:firefox && node extension/scripts/firefox-check.ts
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEV_EXTENSION_REDIRECT_URLS, DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { LICENSE_A } from '../src/testing/fixtures.ts';
import { startFakeBrokerServer } from './fake-broker-server.ts';
import puppeteer, { type Page } from 'puppeteer-core';

/** WebDriver BiDi's navigate: page.goto never resolves for moz-extension:// here. */
function navigate(page: Page, url: string): Promise<unknown> {
  const frame = page.mainFrame() as unknown as {
    browsingContext: { navigate(url: string, wait: 'none'): Promise<unknown> };
  };
  return frame.browsingContext.navigate(url, 'none');
}

const extensionDir = fileURLToPath(new URL('../.output/firefox-mv3', import.meta.url));
const uuid = randomUUID();
const profile = await mkdtemp(join(tmpdir(), 'baton-firefox-'));
const browser = await puppeteer.launch({
  browser: 'firefox',
  executablePath: process.env['FIREFOX_PATH'] ?? '/usr/bin/firefox-esr',
  headless: true,
  args: ['--remote-allow-system-access'],
  userDataDir: profile,
  extraPrefsFirefox: {
    'extensions.webextensions.uuids': JSON.stringify({ [DEV_FIREFOX_GECKO_ID]: uuid }),
  },
});
try {
  await browser.installExtension(extensionDir);
  const page = await browser.newPage();
  await navigate(page, `moz-extension://${uuid}/options.html`);
  await page.waitForSelector('[data-testid="redirect-url"]');
  await page.waitForFunction(
    () => (document.querySelector('[data-testid="redirect-url"]') as HTMLInputElement).value !== '',
  );
  const redirect = await page.$eval(
    '[data-testid="redirect-url"]',
    (e) => (e as HTMLInputElement).value,
  );
  const title = await page.$eval('h1', (e) => e.textContent);
  console.log(`Firefox options page "${title}", redirect URL ${redirect}`);
  if (redirect !== DEV_EXTENSION_REDIRECT_URLS[1]) {
    throw new Error(`expected ${DEV_EXTENSION_REDIRECT_URLS[1]}`);
  }
  console.log('OK: matches DEV_EXTENSION_REDIRECT_URLS[1]');

  // A real flow in Firefox, against the fake broker.
  const fake = await startFakeBrokerServer();
  try {
    await page.$eval(
      '[data-testid="broker-url-input"]',
      (e, url) => ((e as HTMLInputElement).value = url),
      fake.url,
    );
    await page.click('[data-testid="broker-url-save"]');
    await page.waitForSelector('[data-testid="options-status"]:not(:empty)');
    console.log(
      'options:',
      await page.$eval('[data-testid="options-status"]', (e) => e.textContent),
      await page.$eval('[data-testid="broker-url-error"]', (e) => e.textContent),
    );
    await navigate(page, `moz-extension://${uuid}/popup.html`);
    await page.waitForSelector('[data-testid="signed-out"]');
    fake.onAuthStart({ kind: 'grant', license: LICENSE_A });
    await page.click('[data-testid="connect-button"]');
    await page.waitForSelector(
      '[data-testid="connection-card"][data-status="connected"] [data-testid="license-name"]',
      { timeout: 15_000 },
    );
    console.log(
      'Firefox flow OK:',
      await page.$eval('[data-testid="license-name"]', (e) => e.textContent),
    );
    fake.onAuthStart({ kind: 'error', error: 'access_denied' });
    await page.click('[data-testid="connect-button"]');
    await page.waitForSelector('[data-testid="status"][data-state="denied"]', { timeout: 15_000 });
    console.log('Firefox denial OK');
  } finally {
    await fake.stop();
  }
} finally {
  await browser.close();
  await rm(profile, { recursive: true, force: true });
}
