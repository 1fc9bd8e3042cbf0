import { DEMO_PASSWORD } from '@baton/sandbox';
import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { axeViolations } from '../support/axe.ts';
import {
  launchChromium,
  launchFirefox,
  type ExtensionBrowser,
  type FirefoxOptions,
  type UiPage,
} from '../support/browsers.ts';
import {
  CHROMIUM_POLICY_DIR,
  freshExtension,
  writeChromiumPolicy,
  type FreshExtension,
} from '../support/chromium-policy.ts';
import { startWorld, type World } from '../support/world.ts';
import { freePort } from '../support/ports.ts';
import type { BrokerProcess } from '../support/process.ts';
import { logWritten } from '../support/wait.ts';

/**
 * The settings around the flow, in real browsers: the broker's own pages in the sign-in window in
 * the flow's language, a broker that refuses this browser's redirect URL (said at once, with the
 * URL to allow), and the organisation's policy (managed storage): in Firefox read from a real
 * managed-storage manifest, in Chromium from a real policy file in /etc/chromium/policies/managed
 * (which takes root: the test fails, saying so, where it cannot write there). Screenshots of each
 * state: test-results/e2e/settings/.
 */
const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const shots = fileURLToPath(new URL('../../test-results/e2e/settings/', import.meta.url));

/** An extension id of another browser: the refusing broker allows only this one. */
const SOMEONE_ELSE = 'https://elsewhere.chromiumapp.org/';

/** The broker's "invalid sign-in link" page title, per language (server/src/http/pages.ts). */
const INVALID_LINK = {
  fr: "Ce lien de connexion n'est pas valide",
  nl: 'Deze aanmeldlink is niet geldig',
} as const;

/** The popup's sentence for a refused redirect URL, per UI language (_locales). */
const REFUSED = {
  'en-US': 'does not accept this browser yet',
  fr: "n'accepte pas encore ce navigateur",
  nl: 'aanvaardt deze browser nog niet',
} as const;

const status = (state: string) => `[data-testid="status"][data-state="${state}"]`;

let world: World;
let refusing: BrokerProcess;
let other: BrokerProcess;
/** The port of the broker Chromium's policy names (started for that extension's own id). */
let policyPort: number;

beforeAll(async () => {
  await mkdir(shots, { recursive: true });
  const [refusingPort, otherPort] = [await freePort(), await freePort()];
  policyPort = await freePort();
  world = await startWorld({
    brokers: { processes: 1, ports: [port] },
    callbackPorts: [otherPort, policyPort],
    extensionRedirectUrls: null,
  });
  refusing = await world.startProcess({
    PORT: String(refusingPort),
    EXTENSION_REDIRECT_URLS: SOMEONE_ELSE,
  });
  other = await world.startProcess({ PORT: String(otherPort) });
});

afterAll(async () => {
  await refusing?.stop();
  await other?.stop();
  await world?.close();
});

/** Refused at once: no sign-in window, the browser's redirect URL shown to pass on. */
async function expectRefusedAtOnce(popup: UiPage, redirectUrl: string, sentence: string) {
  const before = refusing.lines.length;
  await popup.click('[data-testid="connect-button"]');
  await popup.waitFor(`${status('error')}[data-problem="redirect_not_allowed"]`);
  await popup.waitFor('[data-testid="status-message"]', sentence);
  expect(await popup.texts('[data-testid="status-detail"]')).toEqual([redirectUrl]);
  // The broker was asked, and nothing was started there.
  await logWritten(refusing);
  const asked = refusing.lines.slice(before).join('\n');
  expect(asked).toContain('/auth/redirect-check');
  expect(asked).not.toContain('/auth/start');
}

describe.each([
  { name: 'chromium', launch: () => launchChromium(output('chrome-mv3')) },
  { name: 'firefox', launch: () => launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID) },
])('in $name', ({ name, launch }) => {
  let browser: ExtensionBrowser;
  let popup: UiPage;

  beforeAll(async () => {
    browser = await launch();
    popup = await browser.openPopup();
    await popup.waitFor('[data-testid="connect-button"]');
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('the broker’s own pages in the sign-in window speak the flow’s language', async () => {
    for (const locale of ['fr', 'nl'] as const) {
      const options = await browser.openPage('options.html');
      await options.click(`[data-testid="default-locale-${locale}"]`);
      await options.waitFor('[data-testid="options-status"]', '.');
      await options.close();

      const window = await browser.authWindow(
        () => popup.click('[data-testid="connect-button"]'),
        world.sandbox.url,
      );
      await window.waitFor(`html[lang="${locale}"]`);
      // A broken link into the broker while a sign-in is in progress. Firefox shows the broker's
      // page in the sign-in window; Chromium closes that window on an error page (the popup then
      // says the page failed), so there the page is met in a tab of the same browser.
      const brokenLink = `${world.processes[0]!.url}/auth/start`;
      let page = window;
      if (name === 'firefox') await window.goto(brokenLink);
      else page = await browser.openUrl(brokenLink);
      await page.waitFor('h1', INVALID_LINK[locale]);
      expect(await page.evaluate('document.documentElement.lang')).toBe(locale);
      await page.screenshot(join(shots, `${name}-broker-page-${locale}.png`));
      if (page !== window) await page.close();
      await window.close();
      await popup.waitFor(status('cancelled'));
      await popup.click('[data-testid="dismiss-button"]');
    }
  });

  it('a broker that refuses the redirect URL is named at once, with the URL to allow', async () => {
    const options = await browser.openPage('options.html');
    await options.waitFor('[data-testid="redirect-url"]');
    const [redirectUrl = ''] = await options.evaluate<string[]>(
      `[document.querySelector('[data-testid="redirect-url"]').value]`,
    );
    expect(redirectUrl).toMatch(/^https:\/\//);
    await options.fill('[data-testid="broker-url-input"]', refusing.url);
    await options.click('[data-testid="broker-url-save"]');
    await options.waitFor('[data-testid="options-status"]', '.');
    await popup.waitFor(`[data-testid="signed-out"]`);

    await expectRefusedAtOnce(popup, redirectUrl, REFUSED['en-US']);
    await popup.screenshot(join(shots, `${name}-refused-redirect-en.png`));
    expect(await axeViolations(popup), `${name}: refused redirect URL`).toEqual([]);

    await options.click('[data-testid="broker-url-reset"]');
    await options.close();
  });
});

describe('in firefox, with the organisation’s policy (a managed-storage manifest)', () => {
  const launchManaged = (options: FirefoxOptions) =>
    launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID, options);

  it('a managed broker and language win from the first open, and the flow goes there', async () => {
    const browser = await launchManaged({ managed: { brokerUrl: other.url, locale: 'nl' } });
    try {
      const popup = await browser.openPopup();
      await popup.waitFor('[data-testid="connect-button"]');
      const window = await browser.authWindow(
        () => popup.click('[data-testid="connect-button"]'),
        world.sandbox.url,
      );
      await window.waitFor('html[lang="nl"]');
      await window.fill('#email', 'lotte.vermeulen@example.be');
      await window.fill('#password', DEMO_PASSWORD);
      await window.click('#login');
      await window.waitFor('#license-lic-1001');
      await window.click('#license-lic-1001');
      await window.click('#continue');
      await window.waitFor('#authorize');
      await window.click('#authorize').catch(() => undefined);
      await popup.waitFor('[data-testid="connection-card"][data-status="connected"]');
      // The organisation's broker ran the flow; the build's never saw it.
      await Promise.all([logWritten(other), logWritten(world.processes[0]!)]);
      expect(other.lines.join('\n')).toContain('/auth/callback');
      expect(world.processes[0]!.lines.join('\n')).not.toContain('/auth/callback');
    } finally {
      await browser.close();
    }
  });

  it.each(['fr', 'nl'] as const)(
    'in %s: the options page shows the policy’s settings as the organisation’s, locked',
    async (locale) => {
      const browser = await launchManaged({ locale, managed: { brokerUrl: refusing.url, locale } });
      try {
        const options = await browser.openPage('options.html');
        await options.waitFor('[data-testid="broker-managed"]:not([hidden])');
        expect(
          await options.evaluate<unknown>(`(() => {
            const input = document.querySelector('[data-testid="broker-url-input"]');
            const radios = [...document.querySelectorAll('[data-testid="default-locale"] input')];
            return {
              value: input.value,
              readOnly: input.readOnly,
              saveShown: document.querySelector('[data-testid="broker-url-save"]').checkVisibility(),
              resetShown: document.querySelector('[data-testid="broker-url-reset"]').checkVisibility(),
              checked: radios.find((r) => r.checked)?.value,
              disabled: radios.every((r) => r.disabled),
            };
          })()`),
        ).toEqual({
          value: refusing.url,
          readOnly: true,
          saveShown: false,
          resetShown: false,
          checked: locale,
          disabled: true,
        });
        await options.screenshot(join(shots, `firefox-managed-options-${locale}.png`));
        expect(await axeViolations(options), `managed options, ${locale}`).toEqual([]);

        // The background refuses a change however it is asked.
        const reply = await options.evaluate<unknown>(
          `browser.runtime.sendMessage({ type: 'settings.save', data: { brokerUrl: ${JSON.stringify(world.processes[0]!.url)} } })`,
        );
        expect(reply).toEqual({ ok: true, value: { ok: false, problem: 'managed' } });

        // The build's broker would accept this browser: the refusal proves the policy's is used.
        const popup = await browser.openPopup();
        await popup.waitFor('[data-testid="connect-button"]');
        const redirectUrl = await popup.evaluate<string>('browser.identity.getRedirectURL()');
        await expectRefusedAtOnce(popup, redirectUrl, REFUSED[locale]);
        await popup.screenshot(join(shots, `firefox-managed-refused-redirect-${locale}.png`));
        expect(await axeViolations(popup), `refused redirect URL, ${locale}`).toEqual([]);
      } finally {
        await browser.close();
      }
    },
  );
});

describe(`in chromium, with the organisation’s policy (a file in ${CHROMIUM_POLICY_DIR})`, () => {
  let extension: FreshExtension;
  let managedBroker: BrokerProcess;
  /** Every policy file written, removed by its test and, should that not end, here. */
  const policies: AsyncDisposable[] = [];

  beforeAll(async () => {
    extension = await freshExtension(output('chrome-mv3'));
    managedBroker = await world.startProcess({
      PORT: String(policyPort),
      EXTENSION_REDIRECT_URLS: extension.redirectUrl,
    });
  });

  afterAll(async () => {
    for (const policy of policies) await policy[Symbol.asyncDispose]();
    await managedBroker?.stop();
    await extension?.[Symbol.asyncDispose]();
  });

  /** Chromium started with `settings` as the organisation's policy for this extension. */
  async function launchManaged(settings: Record<string, unknown>): Promise<ExtensionBrowser> {
    const policy = await writeChromiumPolicy(extension.id, settings);
    policies.push(policy);
    return launchChromium(extension.dir);
  }

  it('a managed broker and language win from the first open, and the flow goes there', async () => {
    const browser = await launchManaged({ brokerUrl: managedBroker.url, locale: 'fr' });
    try {
      const popup = await browser.openPopup();
      await popup.waitFor('[data-testid="connect-button"]');
      expect(await popup.evaluate('chrome.storage.managed.get()')).toEqual({
        brokerUrl: managedBroker.url,
        locale: 'fr',
      });
      const window = await browser.authWindow(
        () => popup.click('[data-testid="connect-button"]'),
        world.sandbox.url,
      );
      await window.waitFor('html[lang="fr"]');
      await window.fill('#email', 'lotte.vermeulen@example.be');
      await window.fill('#password', DEMO_PASSWORD);
      await window.click('#login');
      await window.waitFor('#license-lic-1001');
      await window.click('#license-lic-1001');
      await window.click('#continue');
      await window.waitFor('#authorize');
      await window.click('#authorize').catch(() => undefined);
      await popup.waitFor('[data-testid="connection-card"][data-status="connected"]');
      await popup.screenshot(join(shots, 'chromium-managed-connected.png'));
      // The organisation's broker ran the flow; the build's never saw it.
      await Promise.all([logWritten(managedBroker), logWritten(world.processes[0]!)]);
      expect(managedBroker.lines.join('\n')).toContain('/auth/callback');
      expect(world.processes[0]!.lines.join('\n')).not.toContain('/auth/callback');
    } finally {
      await browser.close();
      await policies.pop()?.[Symbol.asyncDispose]();
    }
  });

  it('the options page shows the policy’s settings as the organisation’s, locked', async () => {
    const browser = await launchManaged({ brokerUrl: refusing.url, locale: 'fr' });
    try {
      const options = await browser.openPage('options.html');
      await options.waitFor('[data-testid="broker-managed"]:not([hidden])');
      expect(
        await options.evaluate<unknown>(`(() => {
          const input = document.querySelector('[data-testid="broker-url-input"]');
          const radios = [...document.querySelectorAll('[data-testid="default-locale"] input')];
          return {
            value: input.value,
            readOnly: input.readOnly,
            checked: radios.find((r) => r.checked)?.value,
            disabled: radios.every((r) => r.disabled),
          };
        })()`),
      ).toEqual({ value: refusing.url, readOnly: true, checked: 'fr', disabled: true });
      await options.screenshot(join(shots, 'chromium-managed-options.png'));

      // The background refuses a change however it is asked.
      const reply = await options.evaluate<unknown>(
        `chrome.runtime.sendMessage({ type: 'settings.save', data: { brokerUrl: ${JSON.stringify(world.processes[0]!.url)} } })`,
      );
      expect(reply).toEqual({ ok: true, value: { ok: false, problem: 'managed' } });

      // Refused by the policy's broker, which its log shows was the one asked.
      const popup = await browser.openPopup();
      await popup.waitFor('[data-testid="connect-button"]');
      const redirectUrl = await popup.evaluate<string>('chrome.identity.getRedirectURL()');
      expect(redirectUrl).toBe(extension.redirectUrl);
      await expectRefusedAtOnce(popup, redirectUrl, REFUSED['en-US']);
    } finally {
      await browser.close();
      await policies.pop()?.[Symbol.asyncDispose]();
    }
  });
});
