import { DEMO_PASSWORD } from '@baton/sandbox';
import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  launchChromium,
  launchFirefox,
  type ExtensionBrowser,
  type UiPage,
} from '../support/browsers.ts';
import { extensionSessionToken } from '../support/extension-storage.ts';
import { startWorld, type World } from '../support/world.ts';
import { serveIntegratorPages, type IntegratorPages } from '../support/integrator-page.ts';
import { logWritten, until } from '../support/wait.ts';

/**
 * The integrator's API (docs/extending.md) in real browsers: the end-to-end build's probe content
 * script (extension/src/testing/api-probe.content.ts; global-setup.ts adds http://127.0.0.1 to
 * WXT_API_ORIGINS) runs on an integrator's page and writes what the API gave it into that page.
 * On 127.0.0.1, a listed origin, the page shows users.me fetched through the background and the
 * broker, and nothing secret; on 127.0.0.2, where the probe is declared too but the build lists
 * nothing, the background refuses every call and the broker is never asked. The probe also listens
 * for changes (batonApi.onChange): the listed page hears a licence connected, removed and signed
 * out, in order; the other hears nothing.
 */
const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const shots = fileURLToPath(new URL('../../test-results/e2e/api/', import.meta.url));

const LISTED = '127.0.0.1';
const UNLISTED = '127.0.0.2';
const probe = (name: string) => `[data-testid="baton-e2e"] [data-testid="${name}"]`;
const DONE = '[data-testid="baton-e2e"][data-state="done"]';
const CHANGES = '[data-testid="baton-e2e-changes"]';
const CHANGE = `${CHANGES} [data-testid="change"]`;
const card = (id?: string) =>
  `[data-testid="connection-card"]${id === undefined ? '' : `[data-connection-id="${id}"]`}`;

let world: World;
let pages: IntegratorPages;

beforeAll(async () => {
  await mkdir(shots, { recursive: true });
  world = await startWorld({
    brokers: { processes: 1, ports: [port] },
    extensionRedirectUrls: null,
  });
  pages = await serveIntegratorPages([LISTED, UNLISTED]);
});

afterAll(async () => {
  await pages?.[Symbol.asyncDispose]();
  await world?.close();
});

describe.each([
  { name: 'chromium', launch: () => launchChromium(output('chrome-mv3')) },
  { name: 'firefox', launch: () => launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID) },
])('in $name', ({ name, launch }) => {
  let browser: ExtensionBrowser;
  let popup: UiPage;
  let connectionId = '';

  beforeAll(async () => {
    browser = await launch();
    popup = await browser.openPopup();
    await popup.waitFor('[data-testid="connect-button"]');
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    await writeFile(
      join(shots, `FAILED-${name}-${context.task.name.replace(/\W+/g, '-').slice(0, 50)}.log`),
      [...browser.console, '--- broker ---', ...world.processes[0]!.lines].join('\n'),
    );
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** Opens the integrator's page on `host` and waits for the probe to be done with it. */
  async function integratorPage(host: string, query?: string): Promise<UiPage> {
    const page = await browser.openUrl(pages.url(host, query));
    await page.waitFor(DONE);
    return page;
  }

  /** Connects a licence of the sandbox's demo account through the popup's Connect button. */
  async function connectLicence(licence: string): Promise<void> {
    const window = await browser.authWindow(
      () => popup.click('[data-testid="connect-button"]'),
      world.sandbox.url,
    );
    await window.waitFor('#email');
    await window.fill('#email', 'lotte.vermeulen@example.be');
    await window.fill('#password', DEMO_PASSWORD);
    await window.click('#login');
    await window.waitFor(`#license-${licence}`);
    await window.click(`#license-${licence}`);
    await window.click('#continue');
    await window.waitFor('#authorize');
    await window.click('#authorize').catch(() => undefined);
  }

  const data = async (page: UiPage, testid: string, attribute: string) =>
    page.attributes(probe(testid), `data-${attribute}`);

  it('before a licence is connected, a listed page is told signed_out', async () => {
    const page = await integratorPage(LISTED);
    expect(await data(page, 'connections', 'code')).toEqual(['signed_out']);
    expect(await page.count(probe('user'))).toBe(0);
    await page.close();
  });

  it('a listed page shows users.me fetched through the background, and nothing secret', async () => {
    await connectLicence('lic-1001');
    await popup.waitFor('[data-testid="connection-card"][data-status="connected"]');
    const [id] = await popup.attributes('[data-testid="connection-card"]', 'data-connection-id');
    connectionId = id ?? '';

    const page = await integratorPage(LISTED);
    await page.screenshot(join(shots, `${name}-listed.png`));
    expect(await data(page, 'connections', 'code')).toEqual(['ok']);
    expect(await data(page, 'user', 'connection-id')).toEqual([connectionId]);
    expect(await data(page, 'user', 'code')).toEqual(['200']);
    expect(await data(page, 'user', 'content-type')).toEqual([
      expect.stringMatching(/^application\/json/),
    ]);
    expect(await page.texts(probe('user'))).toEqual([
      'Lotte Vermeulen <lotte.vermeulen@example.be>',
    ]);
    // Method, query and body reached the license API as asked.
    expect(await data(page, 'echo', 'code')).toEqual(['200']);
    expect(await page.texts(probe('echo'))).toEqual(['POST ?q=a+b&tag=x&tag=y {"hello":"baton"}']);
    // The token endpoint is no API path, and the popup's messages are not for content scripts.
    expect(await data(page, 'refused', 'code')).toEqual(['invalid_request']);
    expect(await data(page, 'fixed-message', 'answer')).toEqual(['none']);

    // Nothing secret in the page: its DOM, its storage, its cookies.
    const token = await sessionToken();
    const secrets = [token, ...world.sandbox.sandbox.control.secrets()];
    expect(secrets.length).toBeGreaterThan(2);
    const exposed = await page.evaluate<string>(`JSON.stringify({
      dom: document.documentElement.outerHTML,
      local: { ...localStorage },
      session: { ...sessionStorage },
      cookies: document.cookie,
    })`);
    expect(exposed).toContain('Lotte Vermeulen');
    for (const secret of secrets) expect(exposed).not.toContain(secret);
    await page.close();
  });

  it('a page on an origin not listed gets nothing, and the broker is never asked', async () => {
    expect(connectionId).not.toBe('');
    await logWritten(world.processes[0]!);
    const before = world.processes[0]!.lines.length;

    const page = await integratorPage(UNLISTED, `connection=${encodeURIComponent(connectionId)}`);
    await page.screenshot(join(shots, `${name}-unlisted.png`));
    expect(await data(page, 'connections', 'code')).toEqual(['origin_not_allowed']);
    expect(await data(page, 'user', 'code')).toEqual(['origin_not_allowed']);
    expect(await page.texts(probe('user'))).toEqual(['']);
    expect(await page.count(probe('echo'))).toBe(0);
    expect(await data(page, 'fixed-message', 'answer')).toEqual(['none']);
    expect(await page.evaluate<string>('document.documentElement.outerHTML')).not.toContain(
      'Lotte',
    );
    await logWritten(world.processes[0]!);
    expect(world.processes[0]!.lines.slice(before).join('\n')).not.toContain('/connections');
    await page.close();
  });

  it('a listed page hears a licence connected, removed and signed out, in order; a page not listed hears nothing', async () => {
    expect(connectionId).not.toBe('');
    const listed = await browser.openUrl(pages.url(LISTED));
    await listed.waitFor(`${CHANGES}[data-state="listening"]`);
    const unlisted = await browser.openUrl(pages.url(UNLISTED));
    await unlisted.waitFor(`${CHANGES}[data-state="stopped"]`);
    expect(await unlisted.attributes(CHANGES, 'data-code')).toEqual(['origin_not_allowed']);
    // Chromium stops an idle service worker, and the ports to it: the page connects again.
    if (browser.name === 'chromium') await browser.stopBackground();

    await connectLicence('lic-1002');
    await until(async () => (await popup.count(card())) === 2, {
      deadlineMs: 30_000,
      what: 'the second licence in the popup',
    });
    const added = (await popup.attributes(card(), 'data-connection-id')).find(
      (id) => id !== connectionId,
    );
    if (added === undefined || added === null) throw new Error('no second connection');
    await popup.waitForGone('[aria-busy="true"]');
    await popup.click(`${card(added)} [data-testid="disconnect-button"]`);
    await popup.waitForGone(card(added));
    await popup.click('[data-testid="sign-out-button"]');
    await popup.waitFor('[data-testid="signed-out"]');

    await until(async () => (await listed.count(CHANGE)) >= 3, {
      what: 'three changes on the listed page',
    });
    await listed.screenshot(join(shots, `${name}-changes.png`));
    expect(await listed.attributes(CHANGE, 'data-kind')).toEqual([
      'connected',
      'removed',
      'signed_out',
    ]);
    expect(await listed.attributes(CHANGE, 'data-connection-id')).toEqual([added, added, '']);
    expect(await listed.attributes(CHANGES, 'data-state')).toEqual(['listening']);
    expect(await unlisted.count(CHANGE)).toBe(0);
    expect(await unlisted.attributes(CHANGES, 'data-state')).toEqual(['stopped']);
    await listed.close();
    await unlisted.close();
  });

  async function sessionToken(): Promise<string> {
    const token = await extensionSessionToken(popup);
    if (token === undefined) throw new Error('the extension keeps no session token');
    return token;
  }
});
