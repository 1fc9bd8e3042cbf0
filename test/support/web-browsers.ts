import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser as PwBrowser, type BrowserContext } from 'playwright-core';
import puppeteer, { type Browser as PpBrowser } from 'puppeteer-core';
import { playwrightPage, puppeteerPage, type UiPage } from './browsers.ts';

/**
 * The two browsers of the end-to-end suite as a plain web browser, without the extension: for the
 * broker's own pages (the admin console). Chromium through playwright-core, Firefox ESR through
 * puppeteer-core over WebDriver BiDi, as browsers.ts drives them with the extension.
 */
export interface WebBrowser {
  readonly name: 'chromium' | 'firefox';
  /** Every URL a page of this browser requested (documents, scripts, fetch), in order. */
  readonly requests: string[];
  /** Console lines and page errors, for failure reports. */
  readonly console: string[];
  open(url: string): Promise<WebPage>;
  close(): Promise<void>;
}

export interface WebPage {
  readonly ui: UiPage;
  setViewport(width: number, height: number): Promise<void>;
}

/** Screenshots of the docs are taken at this size. */
export const VIEWPORT = { width: 1280, height: 800 } as const;

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchWebChromium(): Promise<WebBrowser> {
  const browser: PwBrowser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
  const context: BrowserContext = await browser.newContext({ viewport: { ...VIEWPORT } });
  const requests: string[] = [];
  const console: string[] = [];
  return {
    name: 'chromium',
    requests,
    console,
    async open(url) {
      const page = await context.newPage();
      page.on('request', (request) => requests.push(request.url()));
      page.on('console', (message) => console.push(message.text()));
      page.on('pageerror', (error) => console.push(`page error: ${error.message}`));
      await page.goto(url);
      return {
        ui: playwrightPage(page),
        setViewport: (width, height) => page.setViewportSize({ width, height }),
      };
    },
    async close() {
      await context.close();
      await browser.close();
    },
  };
}

export async function launchWebFirefox(): Promise<WebBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'baton-web-firefox-'));
  const home = join(profile, 'home');
  await mkdir(home, { recursive: true });
  const browser: PpBrowser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: '/usr/bin/firefox-esr',
    headless: true,
    userDataDir: join(profile, 'profile'),
    env: { ...process.env, HOME: home },
    defaultViewport: { ...VIEWPORT },
  });
  const requests: string[] = [];
  const console: string[] = [];
  return {
    name: 'firefox',
    requests,
    console,
    async open(url) {
      const page = await browser.newPage();
      page.on('request', (request) => requests.push(request.url()));
      page.on('console', (message) => console.push(message.text()));
      page.on('pageerror', (error) => console.push(`page error: ${String(error)}`));
      await page.goto(url);
      return {
        ui: puppeteerPage(page),
        setViewport: (width, height) => page.setViewport({ width, height }),
      };
    },
    async close() {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
