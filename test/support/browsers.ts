import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page as PwPage, type Worker } from 'playwright-core';
import puppeteer, {
  type Browser as PpBrowser,
  type KeyInput,
  type Page as PpPage,
} from 'puppeteer-core';

/** What a test does with a page, the same in both browsers. Selectors are CSS. */
export interface UiPage {
  readonly url: () => string;
  click(selector: string): Promise<void>;
  /** Focuses `selector` and presses `key` on the keyboard (`Enter`, `Tab`…), as a user would. */
  press(selector: string, key: string): Promise<void>;
  fill(selector: string, value: string): Promise<void>;
  /** Waits until `selector` exists and, with `text`, contains it. */
  waitFor(selector: string, text?: string): Promise<void>;
  /** Waits until no element matches. */
  waitForGone(selector: string): Promise<void>;
  count(selector: string): Promise<number>;
  texts(selector: string): Promise<string[]>;
  attributes(selector: string, name: string): Promise<(string | null)[]>;
  /** Evaluates an expression (may return a promise) in the page. */
  evaluate<T>(expression: string): Promise<T>;
  screenshot(path: string): Promise<void>;
  goto(url: string): Promise<void>;
  close(): Promise<void>;
}

export interface ExtensionBrowser {
  readonly name: 'chromium' | 'firefox';
  /** The profile folder (kept on close when it was given to the launch, for a restart). */
  readonly profile: string;
  /** Console lines of the extension's pages and the auth window, for failure reports. */
  readonly console: string[];
  /** The popup, opened in a tab (a real popup closes when the auth window takes focus). */
  openPopup(): Promise<UiPage>;
  /** One of the extension's pages (`options.html`) in a tab. */
  openPage(path: string): Promise<UiPage>;
  /** Opens `url` in a new tab, as a user following a link would. */
  openUrl(url: string): Promise<UiPage>;
  /** Run `trigger` and return the authorization window it opens, once the sandbox shows in it. */
  authWindow(trigger: () => Promise<void>, sandboxOrigin: string): Promise<UiPage>;
  /**
   * Stops the extension's service worker, as the browser does when it has been idle (Chromium
   * only: Firefox's background page has no such control here; restart the browser instead).
   */
  stopBackground(): Promise<void>;
  close(): Promise<void>;
}

export interface LaunchOptions {
  /**
   * The browser's language (`fr`, `nl`; default `en-US`): its UI, hence the extension's messages,
   * and the languages it asks web pages for. Firefox needs its langpack (firefox-esr-l10n-*).
   */
  readonly locale?: string;
  /**
   * A profile folder to use and keep (created when missing): closing the browser leaves it, so
   * that a second launch with it is the same browser restarted. Without it, a fresh profile that
   * close() removes.
   */
  readonly profile?: string;
}

/** The profile folder to use, and whether close() removes it. */
async function profileFolder(options: LaunchOptions, prefix: string) {
  if (options.profile === undefined)
    return { dir: await mkdtemp(join(tmpdir(), prefix)), temporary: true };
  await mkdir(options.profile, { recursive: true });
  return { dir: options.profile, temporary: false };
}

/**
 * How long a browser step may take: a deadline, not a wait. Generous, as CI runs on a shared host
 * where a window can take many seconds to open while other suites load the cores.
 */
const TIMEOUT = 60_000;
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Runs in the page: self-contained, no closure over this module. */
const hasText = ([selector, text]: readonly [string, string | null]): boolean => {
  const nodes = [...document.querySelectorAll(selector)];
  return nodes.length > 0 && (text === null || nodes.some((n) => n.textContent?.includes(text)));
};

export function playwrightPage(page: PwPage): UiPage {
  page.setDefaultTimeout(TIMEOUT);
  return {
    url: () => page.url(),
    click: (selector) => page.click(selector),
    press: (selector, key) => page.press(selector, key),
    fill: (selector, value) => page.fill(selector, value),
    waitFor: async (selector, text) => {
      await page.waitForFunction(hasText, [selector, text ?? null] as const);
    },
    waitForGone: async (selector) => {
      await page.waitForFunction((s) => document.querySelector(s) === null, selector);
    },
    count: (selector) => page.locator(selector).count(),
    texts: (selector) => page.locator(selector).allTextContents(),
    attributes: (selector, name) =>
      page.$$eval(selector, (nodes, n) => nodes.map((node) => node.getAttribute(n)), name),
    evaluate: (expression) => page.evaluate(expression),
    screenshot: async (path) => {
      await page.screenshot({ path });
    },
    goto: async (url) => {
      await page.goto(url);
    },
    close: () => page.close(),
  };
}

export async function launchChromium(
  extensionDir: string,
  options: LaunchOptions = {},
): Promise<ExtensionBrowser> {
  const { dir: profile, temporary } = await profileFolder(options, 'baton-chromium-');
  const locale = options.locale ?? 'en-US';
  const context: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    ...(locale !== 'en-US' && {
      env: { ...process.env, LANGUAGE: locale, LANG: `${locale}_BE.UTF-8` },
    }),
    args: [
      ...CHROMIUM_ARGS,
      `--lang=${locale}`,
      ...(locale === 'en-US' ? [] : [`--accept-lang=${locale}-BE,${locale}`]),
      `--disable-extensions-except=${extensionDir}`,
      `--load-extension=${extensionDir}`,
    ],
  });
  const console: string[] = [];
  const watch = (page: PwPage) =>
    page.on('console', (message) => console.push(`[${page.url()}] ${message.text()}`));
  context.on('page', watch);
  const watchWorker = (worker: Worker) =>
    worker.on('console', (message) => console.push(`[background] ${message.text()}`));
  context.on('serviceworker', watchWorker);
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  watchWorker(worker);
  const extensionId = new URL(worker.url()).host;
  const openPage = async (path: string) => {
    const page = await context.newPage();
    await page.goto(`chrome-extension://${extensionId}/${path}`);
    return playwrightPage(page);
  };

  return {
    name: 'chromium',
    profile,
    console,
    openPopup: () => openPage('popup.html'),
    openPage,
    async openUrl(url) {
      const page = await context.newPage();
      await page.goto(url);
      return playwrightPage(page);
    },
    async authWindow(trigger, sandboxOrigin) {
      const opened = context.waitForEvent('page', { timeout: TIMEOUT });
      await trigger();
      const page = await opened;
      await page.waitForURL((url) => url.origin === sandboxOrigin, { timeout: TIMEOUT });
      return playwrightPage(page);
    },
    async stopBackground() {
      // Over the DevTools protocol, from a page of the extension's own (its storage partition is
      // the worker's). Playwright only hears of a worker's end when the browser closes: the
      // protocol's own version updates say when it has stopped.
      const page = await context.newPage();
      try {
        await page.goto(`chrome-extension://${extensionId}/manifest.json`);
        const cdp = await context.newCDPSession(page);
        const stopped = new Promise<void>((resolve) => {
          cdp.on('ServiceWorker.workerVersionUpdated', ({ versions }) => {
            const ours = versions.filter((v) =>
              v.scriptURL.startsWith(`chrome-extension://${extensionId}/`),
            );
            if (ours.length > 0 && ours.every((v) => v.runningStatus === 'stopped')) resolve();
          });
        });
        await cdp.send('ServiceWorker.enable');
        await cdp.send('ServiceWorker.stopAllWorkers');
        await stopped;
        await cdp.detach();
      } finally {
        await page.close();
      }
    },
    async close() {
      await context.close();
      if (temporary) await rm(profile, { recursive: true, force: true });
    },
  };
}

export function puppeteerPage(page: PpPage): UiPage {
  page.setDefaultTimeout(TIMEOUT);
  return {
    url: () => page.url(),
    // The popup rebuilds its DOM on every change: an element found a moment before the click may
    // be replaced by then (Playwright retries that by itself; puppeteer says "detached", or, over
    // BiDi, that the node is "not clickable" when it went between finding and clicking).
    click: async (selector) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await page.click(selector);
          return;
        } catch (error) {
          if (attempt >= 5 || !/detached|not attached|not clickable/i.test(String(error)))
            throw error;
        }
      }
    },
    press: async (selector, key) => {
      await page.focus(selector);
      await page.keyboard.press(key as KeyInput);
    },
    fill: async (selector, value) => {
      await page.$eval(selector, (node) => ((node as HTMLInputElement).value = ''));
      await page.type(selector, value);
    },
    waitFor: async (selector, text) => {
      await page.waitForFunction(hasText, {}, [selector, text ?? null] as const);
    },
    waitForGone: async (selector) => {
      await page.waitForFunction((s) => document.querySelector(s) === null, {}, selector);
    },
    count: async (selector) => (await page.$$(selector)).length,
    texts: (selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent ?? '')),
    attributes: (selector, name) =>
      page.$$eval(selector, (nodes, n) => nodes.map((node) => node.getAttribute(n)), name),
    evaluate: (expression) => page.evaluate(expression) as never,
    screenshot: async (path) => {
      await page.screenshot({ path: path as `${string}.png` });
    },
    goto: async (url) => {
      await page.goto(url);
    },
    close: () => page.close(),
  };
}

export const FIREFOX_UUID = '6c0ddc2a-6a43-4a5e-9c62-8b3e7f6a1d20';

export interface FirefoxOptions extends LaunchOptions {
  /**
   * The organisation's policy for the extension: written as a managed-storage manifest under a
   * home folder of the browser's own (~/.mozilla/managed-storage/<id>.json), as an administrator
   * would, and read through `storage.managed`.
   */
  readonly managed?: Record<string, unknown>;
}

export async function launchFirefox(
  extensionDir: string,
  geckoId: string,
  options: FirefoxOptions = {},
): Promise<ExtensionBrowser> {
  const { dir: profile, temporary } = await profileFolder(options, 'baton-firefox-');
  const home = join(profile, 'home');
  await mkdir(join(profile, 'profile'), { recursive: true });
  await mkdir(home, { recursive: true });
  if (options.managed !== undefined) {
    const folder = join(home, '.mozilla', 'managed-storage');
    await mkdir(folder, { recursive: true });
    await writeFile(
      join(folder, `${geckoId}.json`),
      JSON.stringify({
        name: geckoId,
        description: 'Baton settings set by the organisation',
        type: 'storage',
        data: options.managed,
      }),
    );
  }
  const locale = options.locale ?? 'en-US';
  const browser: PpBrowser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: '/usr/bin/firefox-esr',
    headless: true,
    args: ['--remote-allow-system-access'],
    userDataDir: join(profile, 'profile'),
    env: { ...process.env, HOME: home },
    extraPrefsFirefox: {
      'extensions.webextensions.uuids': JSON.stringify({ [geckoId]: FIREFOX_UUID }),
      'intl.locale.requested': locale,
      'intl.accept_languages': locale === 'en-US' ? 'en-US, en' : `${locale}-BE, ${locale}`,
      // The extension is installed anew at each launch (a temporary add-on): a kept profile keeps
      // its storage across that, as an installed add-on keeps it across a restart.
      ...(!temporary && { 'extensions.webextensions.keepStorageOnUninstall': true }),
    },
  });
  await browser.installExtension(extensionDir);
  const console: string[] = [];
  const watch = (page: PpPage) =>
    page.on('console', (message) => console.push(`[${page.url()}] ${message.text()}`));
  const openPage = async (path: string) => {
    const page = await browser.newPage();
    watch(page);
    // page.goto never resolves for moz-extension:// pages here; navigate without waiting.
    await (
      page.mainFrame() as unknown as {
        browsingContext: { navigate(url: string, wait: 'none'): Promise<unknown> };
      }
    ).browsingContext.navigate(`moz-extension://${FIREFOX_UUID}/${path}`, 'none');
    await page.waitForSelector('body');
    return puppeteerPage(page);
  };

  return {
    name: 'firefox',
    profile,
    console,
    openPopup: () => openPage('popup.html'),
    openPage,
    async openUrl(url) {
      const page = await browser.newPage();
      watch(page);
      await page.goto(url);
      return puppeteerPage(page);
    },
    async authWindow(trigger, sandboxOrigin) {
      const target = browser.waitForTarget(
        (candidate) => candidate.type() === 'page' && candidate.url().startsWith(sandboxOrigin),
        { timeout: TIMEOUT },
      );
      await trigger();
      const page = await (await target).page();
      if (!page) throw new Error('the authorization window has no page');
      watch(page);
      return puppeteerPage(page);
    },
    stopBackground() {
      return Promise.reject(new Error('Firefox: restart the browser to start its background anew'));
    },
    async close() {
      await browser.close();
      if (temporary) await rm(profile, { recursive: true, force: true });
    },
  };
}
