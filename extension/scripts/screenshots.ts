/**
 * Screenshots of the popup in every state, in English, French and Dutch, from the real built
 * extension in headless Chromium, driven through real flows against a fake broker on a local
 * port (scripts/fake-broker-server.ts). Also checks the extension id and redirect URL.
 *
 *   pnpm --filter @baton/extension build && node extension/scripts/screenshots.ts
 *
 * Output: extension/test-results/screenshots/<lang>/*.png (git-ignored).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEV_CHROME_EXTENSION_ID, DEV_EXTENSION_REDIRECT_URLS } from '@baton/shared';
import { LICENSE_A, LICENSE_B } from '../src/testing/fixtures.ts';
import { errorResponse } from '../src/testing/fake-broker.ts';
import { launchWithExtension, type Playwright } from './chromium.ts';
import { startFakeBrokerServer, type FakeBrokerServer } from './fake-broker-server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const extensionDir = join(root, '.output/chrome-mv3');
const outDir = join(root, 'test-results/screenshots');
const LANGUAGES = (process.env['LANGS'] ?? 'en,fr,nl').split(',');
const TIMEOUT = 15_000;

if (!existsSync(join(extensionDir, 'manifest.json'))) {
  console.error(
    'No build in .output/chrome-mv3: run `pnpm --filter @baton/extension build` first.',
  );
  process.exit(1);
}

type Page = Playwright.Page;

async function shoot(page: Page, lang: string, name: string): Promise<void> {
  // Let the spinner and fonts settle into a stable frame.
  await page.evaluate(() => document.fonts.ready);
  const path = join(outDir, lang, `${name}.png`);
  await page.screenshot({ path, fullPage: true, animations: 'disabled' });
  console.log(`  ${lang}/${name}.png`);
}

const status = (state: string) => `[data-testid="status"][data-state="${state}"]`;

async function openPopup(context: Playwright.BrowserContext, id: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 380, height: 560 });
  await page.goto(`chrome-extension://${id}/popup.html`);
  await page.waitForSelector('#main:not([aria-busy])', { timeout: TIMEOUT });
  return page;
}

async function reopen(page: Page): Promise<void> {
  await page.reload();
  await page.waitForSelector('#main:not([aria-busy])', { timeout: TIMEOUT });
}

async function connect(page: Page, fake: FakeBrokerServer, license: typeof LICENSE_A) {
  fake.onAuthStart({ kind: 'grant', license });
  await page.click('[data-testid="connect-button"]');
  await page.waitForSelector(
    `[data-testid="connection-card"][data-connection-id="${license.connectionId}"][data-status="connected"] [data-testid="license-name"]`,
    { timeout: TIMEOUT },
  );
  await page.waitForSelector('[data-testid="updated-at"]:not(:empty)', { timeout: TIMEOUT });
}

async function run(lang: string): Promise<void> {
  console.log(`${lang}:`);
  await mkdir(join(outDir, lang), { recursive: true });
  const profile = await mkdtemp(join(tmpdir(), 'baton-shots-'));
  const fake = await startFakeBrokerServer();
  const context = await launchWithExtension(profile, extensionDir, {
    env: { LANGUAGE: lang, LANG: `${lang}_BE.UTF-8` },
    args: [`--lang=${lang}`, `--accept-lang=${lang}-BE,${lang}`],
    deviceScaleFactor: 2,
  });
  try {
    const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    const id = new URL(worker.url()).host;
    if (id !== DEV_CHROME_EXTENSION_ID)
      throw new Error(`extension id ${id} ≠ ${DEV_CHROME_EXTENSION_ID}`);

    // Options page: point the extension at the fake broker, as a user would.
    const options = await context.newPage();
    await options.setViewportSize({ width: 760, height: 700 });
    await options.goto(`chrome-extension://${id}/options.html`);
    await options.waitForSelector('[data-testid="redirect-url"]');
    await options.waitForFunction(
      () =>
        (document.querySelector('[data-testid="redirect-url"]') as HTMLInputElement).value !== '',
    );
    const redirect = await options.inputValue('[data-testid="redirect-url"]');
    if (redirect !== DEV_EXTENSION_REDIRECT_URLS[0]) throw new Error(`redirect URL ${redirect}`);
    await options.fill('[data-testid="broker-url-input"]', fake.url);
    await options.click('[data-testid="broker-url-save"]');
    await options.waitForSelector('[data-testid="options-status"]:not(:empty)');
    await shoot(options, lang, '00-options');
    await options.close();

    const page = await openPopup(context, id);
    await page.waitForSelector('[data-testid="signed-out"]');
    await shoot(page, lang, '01-signed-out');

    // Connecting: the auth window stays open on a "provider" page.
    fake.onAuthStart({ kind: 'hold' });
    const authWindow = context.waitForEvent('page');
    await page.click('[data-testid="connect-button"]');
    const auth = await authWindow;
    await page.waitForSelector(status('connecting'));
    await shoot(page, lang, '02-connecting');
    await auth.close();
    await page.waitForSelector(status('cancelled'));
    await shoot(page, lang, '02b-cancelled');

    // Access denied on the provider page.
    fake.onAuthStart({ kind: 'error', error: 'access_denied' });
    await page.click('[data-testid="connect-button"]');
    await page.waitForSelector(status('denied'));
    await shoot(page, lang, '06-access-denied');

    // Two licenses, one session.
    await connect(page, fake, LICENSE_A);
    await connect(page, fake, LICENSE_B);
    await page.click('[data-testid="dismiss-button"]');
    await page.waitForSelector(status('idle'), { state: 'attached' });
    await shoot(page, lang, '03-connected');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot(page, lang, '03-connected-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.click(
      `[data-connection-id="${LICENSE_B.connectionId}"] [data-testid="details-toggle"]`,
    );
    await shoot(page, lang, '03b-details');

    // An error: the handoff cannot be redeemed.
    fake.broker.fail('POST', '/session', () => errorResponse('invalid_grant'), { once: true });
    fake.onAuthStart({ kind: 'grant', license: LICENSE_A });
    await page.click('[data-testid="connect-button"]');
    await page.waitForSelector(`${status('error')}[data-problem="invalid_grant"]`);
    await shoot(page, lang, '07-error');
    await page.click('[data-testid="dismiss-button"]');

    // Disconnected: the broker's refresh of license B was rejected.
    const token = fake.broker.sessionTokens()[0] ?? '';
    fake.broker.disconnect(token, LICENSE_B.connectionId, 'refresh_rejected');
    await reopen(page);
    await page.waitForSelector(
      `[data-connection-id="${LICENSE_B.connectionId}"][data-status="disconnected"]`,
    );
    await page.waitForSelector('[data-testid="updated-at"]:not(:empty)');
    await shoot(page, lang, '04-disconnected');
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot(page, lang, '04-disconnected-dark');
    await page.emulateMedia({ colorScheme: 'light' });

    // Reconnecting license B: its card shows the flow running for it.
    fake.onAuthStart({ kind: 'hold' });
    const reauthWindow = context.waitForEvent('page');
    await page.click(
      `[data-connection-id="${LICENSE_B.connectionId}"] [data-testid="reconnect-button"]`,
    );
    const reauth = await reauthWindow;
    await page.waitForSelector(
      `[data-connection-id="${LICENSE_B.connectionId}"][data-status="connecting"]`,
    );
    await shoot(page, lang, '04b-reconnecting');
    await reauth.close();
    await page.waitForSelector(status('cancelled'));
    await page.click('[data-testid="dismiss-button"]');

    // Broker unreachable: the cached cards stay, with a retry.
    await fake.stop();
    await reopen(page);
    await page.waitForSelector(status('unreachable'));
    await shoot(page, lang, '05-unreachable');
    await fake.start();
    await page.click('[data-testid="retry-button"]');
    await page.waitForSelector(status('idle'), { state: 'attached' });

    // Sign out of everything.
    await page.click('[data-testid="sign-out-button"]');
    await page.waitForSelector('[data-testid="signed-out"]');
    await shoot(page, lang, '08-signed-out-notice');

    // Keyboard: Tab from the language picker to the Connect button shows the focus ring.
    await page.focus('[data-testid="locale-select"]');
    await page.keyboard.press('Tab');
    await shoot(page, lang, '09-keyboard-focus');
  } finally {
    await context.close();
    await fake.stop().catch(() => undefined);
    await rm(profile, { recursive: true, force: true });
  }
}

for (const lang of LANGUAGES) await run(lang);
console.log(`Screenshots in ${outDir}`);
