import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { axeViolations } from '../support/axe.ts';
import {
  launchChromium,
  launchFirefox,
  type ExtensionBrowser,
  type LaunchOptions,
  type UiPage,
} from '../support/browsers.ts';
import { startWorld, type World } from '../support/world.ts';
import { signInAtSandbox } from '../support/sandbox-sign-in.ts';
import { until } from '../support/wait.ts';

/**
 * The popup as a person meets it, in both browsers: what it shows at once after a restart (the
 * licenses it knew, even with the broker down), identifiers as the API gives them, messages that
 * go with what they are about, focus that stays somewhere visible, and axe-core (WCAG 2.1 AA and
 * best practices) finding nothing in any state reached, popup and options page, in English,
 * French and Dutch. Screenshots of failures: test-results/e2e/popup/.
 */
const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const resultsRoot = fileURLToPath(new URL('../../test-results/e2e/popup/', import.meta.url));

const FIRST = 'lic-1001';
const SECOND = 'lic-1002';
/** The demo account's id in the sandbox's users.me (test/sandbox/src/accounts.ts). */
const ACCOUNT_ID = '40217';

const card = (id?: string, status?: string) =>
  `[data-testid="connection-card"]${id ? `[data-connection-id="${id}"]` : ''}${status ? `[data-status="${status}"]` : ''}`;
const status = (state: string) => `[data-testid="status"][data-state="${state}"]`;

const BROWSERS = [
  {
    name: 'chromium',
    launch: (options: LaunchOptions) => launchChromium(output('chrome-mv3'), options),
  },
  {
    name: 'firefox',
    launch: (options: LaunchOptions) =>
      launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID, options),
  },
] as const;

/**
 * Each browser gets a world of its own (Redis, the sandbox, the broker): the broker allows 60
 * requests a minute under /auth from one address, and these tests sign in a dozen times.
 */
let world: World;
function ownStack(): void {
  beforeAll(async () => {
    await mkdir(resultsRoot, { recursive: true });
    world = await startWorld({
      brokers: { processes: 1, ports: [port] },
      extensionRedirectUrls: null,
    });
  });
  afterAll(async () => {
    await world?.close();
  });
}

/** axe-core's findings on `page`, none expected; `where` names the state in the failure. */
async function expectAccessible(page: UiPage, where: string): Promise<void> {
  expect(await axeViolations(page), where).toEqual([]);
}

/** The focused element: its id, whether it shows as focused, and its outline. */
const focusOf = (page: UiPage) =>
  page.evaluate<{ id: string; tag: string; visible: boolean; outline: string }>(`(() => {
    const e = document.activeElement;
    return {
      id: e?.id ?? '',
      tag: e?.tagName ?? '',
      visible: e?.matches(':focus-visible') ?? false,
      outline: e ? getComputedStyle(e).outlineStyle : 'none',
    };
  })()`);

describe.each(BROWSERS)('in $name', ({ name, launch }) => {
  ownStack();
  let profile: string;
  let browser: ExtensionBrowser;
  let popup: UiPage;

  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), `baton-popup-${name}-`));
    browser = await launch({ profile });
    popup = await browser.openPopup();
    await popup.waitFor('[data-testid="connect-button"]');
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    const label = `${name}-${context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`;
    await popup.screenshot(join(resultsRoot, `FAILED-${label}.png`)).catch(() => {});
    await writeFile(
      join(resultsRoot, `FAILED-${label}.log`),
      [...browser.console, '--- broker ---', ...world.processes[0]!.lines].join('\n'),
    );
  });

  afterAll(async () => {
    await browser?.close();
    await rm(profile, { recursive: true, force: true });
  });

  const sandbox = () => world.sandbox.sandbox.control;

  /** Signed out, the sandbox reset. */
  async function signedOut(): Promise<void> {
    if ((await popup.count('[data-testid="sign-out-button"]')) > 0) {
      await popup.click('[data-testid="sign-out-button"]');
      await popup.waitFor('[data-testid="signed-out"]');
    }
    sandbox().reset();
  }

  /** Signed out, then these licenses connected through the sandbox's pages, in this order. */
  async function connected(...licenses: string[]): Promise<void> {
    await signedOut();
    for (const [index, licenseId] of licenses.entries()) {
      await signInAtSandbox(browser, popup, world.sandbox.url, { licenseId });
      await until(async () => (await popup.count(card(undefined, 'connected'))) === index + 1, {
        deadlineMs: 30_000,
        what: `license ${licenseId} to show as connected`,
      });
    }
    await popup.waitForGone('[aria-busy="true"]');
  }

  /**
   * Makes the popup draw itself again, from outside: the options page sets the default language,
   * the background writes the view, and the popup's picker shows it. Focus must survive that.
   */
  async function redrawWithLocale(locale: 'fr' | 'nl'): Promise<void> {
    const options = await browser.openPage('options.html');
    await options.click(`[data-testid="default-locale-${locale}"]`);
    await options.waitFor('[data-testid="options-status"]', '.');
    await options.close();
    await until(
      async () =>
        (await popup.evaluate<string>(
          `document.querySelector('[data-testid="locale-select"]').value`,
        )) === locale,
      {
        what: `the popup to show ${locale}`,
      },
    );
  }

  it('signed out, and the options page with an invalid address sent by Enter: nothing for axe, the error announced', async () => {
    await signedOut();
    await expectAccessible(popup, `${name}: signed out`);

    const options = await browser.openPage('options.html');
    try {
      await options.waitFor('[data-testid="redirect-url"]');
      await expectAccessible(options, `${name}: options`);
      await options.fill('[data-testid="broker-url-input"]', 'not a url');
      await options.press('[data-testid="broker-url-input"]', 'Enter');
      await options.waitFor('[data-testid="broker-url-error"]', ' ');
      // Focus stays in the field: the sentence is read out because it is an alert.
      expect(
        await options.evaluate<unknown>(`(() => {
          const error = document.querySelector('[data-testid="broker-url-error"]');
          return {
            focused: document.activeElement?.getAttribute('data-testid'),
            alert: error.closest('[role="alert"], [aria-live="assertive"]') !== null,
            described: document.activeElement?.getAttribute('aria-describedby')?.split(' ').includes(error.id),
          };
        })()`),
      ).toEqual({ focused: 'broker-url-input', alert: true, described: true });
      await expectAccessible(options, `${name}: options, invalid address`);
    } finally {
      await options.close();
    }
  });

  it('while a sign-in runs, and with two licenses of one person, details open: nothing for axe, the cards told apart', async () => {
    await connected(FIRST);
    const window = await browser.authWindow(
      () => popup.click('[data-testid="connect-button"]'),
      world.sandbox.url,
    );
    await popup.waitFor(status('connecting'));
    await expectAccessible(popup, `${name}: connecting`);
    await window.close();
    await popup.waitFor(status('cancelled'));
    await expectAccessible(popup, `${name}: sign-in window closed`);

    await signInAtSandbox(browser, popup, world.sandbox.url, { licenseId: SECOND });
    await until(async () => (await popup.count(card(undefined, 'connected'))) === 2, {
      what: 'both licenses to show',
    });
    await popup.waitForGone('[aria-busy="true"]');
    await popup.waitFor(status('success'));
    await expectAccessible(popup, `${name}: two licenses, "connected"`);

    for (const i of [1, 2]) await popup.click(`li:nth-child(${i}) [data-testid="details-toggle"]`);
    await popup.waitFor('details[open] [data-testid="user-details"]');
    await expectAccessible(popup, `${name}: two licenses, details open`);

    // One person, two licenses: the headings and the "All details" names differ.
    const names = await popup.evaluate<{ headings: string[]; details: string[] }>(`({
      headings: [...document.querySelectorAll('[data-testid="connection-card"] h3')].map((h) => h.textContent),
      details: [...document.querySelectorAll('[data-testid="details-toggle"]')].map((s) => s.getAttribute('aria-label') ?? s.textContent),
    })`);
    expect(names.headings).toEqual([
      'Lotte Vermeulen, Bakkerij Vermeulen',
      'Lotte Vermeulen, Vermeulen & Zonen Vastgoed',
    ]);
    expect(new Set(names.details).size).toBe(2);
    expect(names.details[0]).toMatch(/^All details/);
  });

  it('shows identifiers exactly as the API gives them', async () => {
    await connected(FIRST);
    await popup.click('[data-testid="details-toggle"]');
    await popup.waitFor('[data-testid="user-details"] [data-fact="accountId"]');
    expect(await popup.texts('[data-testid="user-details"] [data-fact="accountId"]')).toEqual([
      ACCOUNT_ID,
    ]);
    expect(await popup.texts('[data-testid="user-details"] [data-fact="licenseId"]')).toEqual([
      FIRST,
    ]);
  });

  it('"Licence connected." goes once that license shows as disconnected', async () => {
    await connected(SECOND, FIRST);
    await popup.waitFor(status('success'));
    sandbox().revokeGrant(FIRST);
    sandbox().expireAccessTokens(FIRST);
    await popup.click('[data-testid="refresh-button"]');
    await popup.waitFor(card(undefined, 'disconnected'));
    await popup.waitForGone('[aria-busy="true"]');

    expect(await popup.attributes('[data-testid="status"]', 'data-state')).toEqual(['idle']);
    await expectAccessible(popup, `${name}: a license disconnected`);
  });

  it('after Dismiss by keyboard, focus is on the heading, and it shows', async () => {
    await connected(FIRST);
    await popup.waitFor(status('success'));
    await popup.press('[data-testid="dismiss-button"]', 'Enter');
    await popup.waitFor(status('idle'));

    expect(await focusOf(popup)).toEqual({
      id: 'licenses-title',
      tag: 'H2',
      visible: true,
      outline: 'solid',
    });
  });

  it('a denied sign-in: the status line reads its message, not its buttons', async () => {
    await connected(FIRST);
    await signInAtSandbox(browser, popup, world.sandbox.url, {
      licenseId: FIRST,
      decision: 'deny',
    });
    await popup.waitFor(`${status('denied')} [data-testid="status-message"]`);

    expect(
      await popup.evaluate<unknown>(`(() => {
        const status = document.querySelector('[data-testid="status"]');
        const live = [...status.querySelectorAll('[aria-live], [role="status"], [role="alert"]')];
        return {
          live: live.map((region) => region.querySelector('[data-testid="status-message"]') !== null),
          buttonsInLive: live.some((region) => region.querySelector('button') !== null),
          statusIsLive: status.matches('[aria-live], [role="status"]'),
          buttons: status.querySelectorAll('button').length,
        };
      })()`),
    ).toEqual({ live: [true], buttonsInLive: false, statusIsLive: false, buttons: 2 });
    await expectAccessible(popup, `${name}: sign-in denied`);
  });

  it('signing out, or disconnecting the last license, by keyboard: focus on the signed-out heading, kept there', async () => {
    await connected(FIRST);
    await popup.press('[data-testid="sign-out-button"]', 'Enter');
    await popup.waitFor('[data-testid="signed-out"]');
    await popup.waitFor(status('notice'));
    await redrawWithLocale('fr');
    expect(await focusOf(popup)).toMatchObject({ id: 'intro-title', visible: true });
    await expectAccessible(popup, `${name}: signed out, with the notice`);

    await connected(FIRST);
    await popup.press('[data-testid="disconnect-button"]', 'Enter');
    await popup.waitFor('[data-testid="signed-out"]');
    await redrawWithLocale('nl');
    expect(await focusOf(popup)).toMatchObject({ id: 'intro-title', visible: true });
  });

  it('after a browser restart, shows the licenses it knew at once, even with the broker down, and refreshes them in place', async () => {
    await connected(FIRST, SECOND);
    await browser.close();
    await world.processes[0]!.stop();
    browser = await launch({ profile });
    popup = await browser.openPopup();

    // Nothing can have come from the broker: these are the licenses kept from before.
    await popup.waitFor(card());
    expect(await popup.count('[data-testid="signed-out"]')).toBe(0);
    expect(await popup.texts('[data-testid="license-name"]')).toEqual([
      'Bakkerij Vermeulen',
      'Vermeulen & Zonen Vastgoed',
    ]);
    await popup.waitFor(status('unreachable'));
    expect(await popup.count(card())).toBe(2);
    await expectAccessible(popup, `${name}: after a restart, the broker down`);

    await world.restartProcess(0);
    await popup.click('[data-testid="retry-button"]');
    // Refreshed (the status line idle, nothing loading: one check, as loading is idle too).
    await popup.waitFor(`body:has(${status('idle')}):not(:has([aria-busy="true"]))`);
    expect(await popup.count(card(undefined, 'connected'))).toBe(2);
  });
});

describe.each(['fr', 'nl'] as const)('in %s', (locale) => {
  ownStack();
  describe.each(BROWSERS)('in $name', ({ name, launch }) => {
    it('the popup signed out and with a license, details open, and the options page: nothing for axe', async () => {
      const browser = await launch({ locale });
      try {
        const popup = await browser.openPopup();
        await popup.waitFor(`html[lang^="${locale}"] [data-testid="connect-button"]`);
        await expectAccessible(popup, `${name}, ${locale}: signed out`);

        await signInAtSandbox(browser, popup, world.sandbox.url, { licenseId: SECOND });
        await popup.waitFor(card(undefined, 'connected'));
        await popup.waitForGone('[aria-busy="true"]');
        await popup.click('[data-testid="details-toggle"]');
        await popup.waitFor('details[open] [data-testid="user-details"]');
        await expectAccessible(popup, `${name}, ${locale}: a license, details open`);

        const options = await browser.openPage('options.html');
        await options.waitFor('[data-testid="redirect-url"]');
        await expectAccessible(options, `${name}, ${locale}: options`);
      } finally {
        await browser.close();
      }
    });
  });
});
