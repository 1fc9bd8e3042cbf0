import { connectionsResponseSchema, routes } from '@baton/shared';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations } from '../support/axe.ts';
import type { UiPage } from '../support/browsers.ts';
import { connectVia, type Connected } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import {
  launchWebChromium,
  launchWebFirefox,
  type WebBrowser,
  type WebPage,
} from '../support/web-browsers.ts';
import { startWorld, type World } from '../support/world.ts';

/**
 * The admin console (server/src/http/admin/console/) in real Chromium and Firefox, against a
 * broker process with its admin listener (ADMIN_PORT) on a real Redis: an operator signs in with
 * a token, finds a licence by its api_url, sees its connection, disconnects it after a
 * confirmation (cancelled once first) and sees the row and the overview change; a viewer is shown
 * no action; axe finds nothing with results shown and with the dialog open; the token is never in
 * a URL, localStorage or any request's URL.
 *
 * With BATON_SCREENSHOTS=1, the Chromium run also writes the guide's two screenshots
 * (docs/images/admin-console-*.png, 1280x800); without it, nothing is written to docs/.
 */
const docsImages = fileURLToPath(new URL('../../docs/images/', import.meta.url));
const resultsRoot = fileURLToPath(
  new URL('../../test-results/e2e-admin-console/', import.meta.url),
);
const SCREENSHOTS = process.env.BATON_SCREENSHOTS === '1';

const OPERATOR = { name: 'ops-alice', role: 'operator', token: randomBytes(24).toString('hex') };
const VIEWER = { name: 'support-bob', role: 'viewer', token: randomBytes(24).toString('hex') };
const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

const row = (id: string, status?: string) =>
  `#connections tbody tr[data-connection-id="${id}"]${status ? `[data-status="${status}"]` : ''}`;
const field = (name: string) => `#overview [data-field="${name}"]`;
const OPEN_DIALOG = 'dialog#confirm[open]';

/** The texts of the buttons a person can see (not hidden by the page or its stylesheet). */
const VISIBLE_BUTTONS = `[...document.querySelectorAll('button')]
  .filter((b) => b.getClientRects().length > 0 && !b.closest('dialog:not([open])'))
  .map((b) => b.textContent.trim())`;

async function signIn(page: UiPage, who: { name: string; role: string; token: string }) {
  await page.waitFor('#token');
  await page.fill('#token', who.token);
  await page.press('#token', 'Enter');
  await page.waitFor('#identity-name', who.name);
  expect(await page.texts('#identity-role')).toEqual([who.role]);
  await page.waitFor(field('sessions'));
}

async function search(page: UiPage, licence: string) {
  await page.fill('#search-value', licence);
  await page.click('#search-form button[type="submit"]');
  await page.waitFor('#connections-summary', licence);
}

describe.each([
  { name: 'chromium', launch: launchWebChromium },
  { name: 'firefox', launch: launchWebFirefox },
])('the admin console in $name', ({ name, launch }) => {
  let world: World;
  let folder: string;
  let browser: WebBrowser;
  let tab: WebPage;
  let page: UiPage;
  let consoleUrl: string;
  let target: Connected;
  let other: Connected;
  let licence: string;
  const shots = join(resultsRoot, name);

  beforeAll(async () => {
    await mkdir(shots, { recursive: true });
    folder = await mkdtemp(join(tmpdir(), 'baton-admin-tokens-'));
    const tokensFile = join(folder, 'admin-tokens.json');
    await writeFile(
      tokensFile,
      JSON.stringify(
        [OPERATOR, VIEWER].map(({ name: who, role, token }) => ({
          name: who,
          role,
          sha256: sha256(token),
        })),
      ),
    );
    const adminPort = await freePort();
    world = await startWorld({
      brokers: { processes: 1 },
      env: { ADMIN_PORT: String(adminPort), ADMIN_TOKENS_FILE: tokensFile },
    });
    consoleUrl = `http://127.0.0.1:${adminPort}/`;
    // Two licences, each in a session of its own: the search must show only the one asked for.
    const control = world.control;
    control.setConsent({ mode: 'approve', licenseId: 'lic-1001' });
    target = await connectVia(world.client(), { start: 0, callback: 0, redeem: 0 });
    control.setConsent({ mode: 'approve', licenseId: 'lic-2001' });
    other = await connectVia(world.client(), { start: 0, callback: 0, redeem: 0 });
    licence = `${world.providerUrl}/licenses/lic-1001`;
    browser = await launch();
    tab = await browser.open(consoleUrl);
    page = tab.ui;
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    const label = context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
    await page?.screenshot(join(shots, `FAILED-${label}.png`)).catch(() => {});
    await writeFile(
      join(shots, `FAILED-${label}.txt`),
      [...(browser?.console ?? []), '--- broker', ...(world?.processes[0]?.lines ?? [])].join('\n'),
    ).catch(() => {});
  });

  afterAll(async () => {
    await browser?.close();
    await world?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('refuses a wrong token on the sign-in form, saying so', async () => {
    await page.waitFor('#token');
    await page.fill('#token', 'not-a-token-of-ours');
    await page.click('#sign-in-form button[type="submit"]');
    await page.waitFor('#message', 'That token was not accepted');
    expect(await page.count('#signed-in[hidden]')).toBe(1);
  });

  it('signs an operator in, and shows the overview: build, Redis, sessions, connections', async () => {
    await signIn(page, OPERATOR);
    expect(await page.texts(field('redis.topology'))).toEqual(['standalone']);
    expect(await page.texts(field('redis.master.0'))).toEqual([expect.stringMatching(/^up, /)]);
    // On Redis, sessions are counted by a census (a walk of the keyspace), none run yet.
    expect(await page.texts(field('sessions'))).toEqual(['not counted yet']);
    expect(await page.texts(field('connections.connected'))).toEqual(['2']);
    expect(await page.texts(field('connections.disconnected'))).toEqual(['0']);
  });

  it('counts now for an operator: the census runs, and the overview shows its figures, dated', async () => {
    await page.click('#census-start');
    await page.waitFor('#message', 'Count started');
    // The census is quick here: the page asks how it goes until done, then redraws the overview.
    await page.waitFor(`${field('sessions')} time[datetime]`);
    expect(await page.texts(field('sessions'))).toEqual([
      expect.stringMatching(/^2 \(counted (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC\)$/),
    ]);
    expect(await page.texts(field('keyId.k'))).toEqual(['2']);
    expect(await page.texts('#census-start')).toEqual(['Count now']);
  });

  it("finds a licence by its api_url and lists its connection only, with an operator's actions", async () => {
    await search(page, licence);
    await page.waitFor(row(target.id, 'connected'));
    expect(await page.count('#connections tbody tr')).toBe(1);
    expect(await page.count(row(other.id))).toBe(0);
    const cells = await page.texts(`${row(target.id)} td`);
    expect(cells[0]).toBe(target.id);
    expect(cells[1]).toMatch(/^ses_/);
    expect(cells[2]).toBe(licence);
    expect(cells[3]).toBe('connected');
    expect(await page.count(`${row(target.id)} button[data-action="disconnect"]`)).toBe(1);
    expect(await page.count('#licence-actions:not([hidden]) #end-licence')).toBe(1);
  });

  it('has no accessibility violations (axe) signed in, with results shown', async () => {
    expect(await axeViolations(page)).toEqual([]);
    if (SCREENSHOTS && name === 'chromium') {
      await mkdir(docsImages, { recursive: true });
      await page.screenshot(join(docsImages, 'admin-console-overview.png'));
    }
  });

  it('asks before disconnecting: Cancel changes nothing, Confirm disconnects and the overview follows', async () => {
    const disconnect = `${row(target.id)} button[data-action="disconnect"]`;
    await page.click(disconnect);
    await page.waitFor(OPEN_DIALOG, 'Disconnect this connection?');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('confirm-cancel');
    expect(await page.texts('#confirm-text')).toEqual([expect.stringContaining(licence)]);
    expect(await axeViolations(page)).toEqual([]);
    if (SCREENSHOTS && name === 'chromium')
      await page.screenshot(join(docsImages, 'admin-console-confirm.png'));

    await page.click('#confirm-cancel');
    await page.waitForGone(OPEN_DIALOG);
    await page.waitFor('#message', 'nothing was changed');
    expect(await page.count(row(target.id, 'connected'))).toBe(1);
    expect(
      await page.evaluate<string | null>(`document.activeElement.dataset.action ?? null`),
    ).toBe('disconnect');

    await page.click(disconnect);
    await page.waitFor(OPEN_DIALOG);
    await page.click('#confirm-ok');
    await page.waitFor(row(target.id, 'disconnected'));
    await page.waitFor('#message', 'Disconnected 1 connection.');
    expect((await page.texts(`${row(target.id)} td`))[7]).toBe('disconnected_by_operator');
    expect(await page.count(`${row(target.id)} button[data-action="disconnect"]`)).toBe(0);
    await page.waitFor(field('connections.disconnected'), '1');
    expect(await page.texts(field('connections.connected'))).toEqual(['1']);
    expect(await page.texts(field('connections.disconnected'))).toEqual(['1']);

    // The user's side: the extension's session now lists that connection as disconnected.
    const listed = await world.client().fetch(routes.connections, {
      headers: { authorization: `Bearer ${target.token}` },
    });
    const { connections } = connectionsResponseSchema.parse(await listed.json());
    expect(connections.find((c) => c.id === target.id)).toMatchObject({
      status: 'disconnected',
      disconnected_reason: 'disconnected_by_operator',
    });
  });

  it('shows a viewer the same data and no action', async () => {
    await page.click('#sign-out');
    await page.waitFor('#message', 'Signed out.');
    await signIn(page, VIEWER);
    await search(page, licence);
    await page.waitFor(row(target.id, 'disconnected'));
    expect(await page.count('button[data-action]')).toBe(0);
    const visible = await page.evaluate<string[]>(VISIBLE_BUTTONS);
    expect(visible).toEqual(['Sign out', 'Refresh', 'Search', 'Refresh', 'Refresh']);
    expect(await axeViolations(page)).toEqual([]);
  });

  it('keeps the token out of every URL and of localStorage, and forgets it on signing out', async () => {
    expect(browser.requests.some((url) => url.endsWith('/api/v1/whoami'))).toBe(true);
    for (const { token } of [OPERATOR, VIEWER]) {
      expect(page.url()).not.toContain(token);
      expect(browser.requests.filter((url) => url.includes(token))).toEqual([]);
      expect(await page.evaluate<string>('JSON.stringify(localStorage)')).not.toContain(token);
    }
    expect(await page.evaluate<number>('localStorage.length')).toBe(0);
    await page.click('#sign-out');
    await page.waitFor('#sign-in:not([hidden])');
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    expect(await page.count('#connections tbody tr')).toBe(0);
  });

  it('stays usable on a narrow window: nothing wider than the window but the tables, which scroll', async () => {
    await tab.setViewport(420, 800);
    await signIn(page, OPERATOR);
    await search(page, licence);
    await page.waitFor(row(target.id));
    expect(
      await page.evaluate<boolean>(
        'document.documentElement.scrollWidth <= document.documentElement.clientWidth',
      ),
    ).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
  });
});
