import { DEV_EXTENSION_REDIRECT_URLS, DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  launchChromium,
  launchFirefox,
  type ExtensionBrowser,
  type LaunchOptions,
  type UiPage,
} from '../support/browsers.ts';
import { Client, consent, redeemAt, startAuth } from '../support/client.ts';
import { extensionSessionToken, sessionTokensIn } from '../support/extension-storage.ts';
import {
  serveIntegratorPages,
  STORAGE_PROBE_PATH,
  type IntegratorPages,
} from '../support/integrator-page.ts';
import { signInAtSandbox } from '../support/sandbox-sign-in.ts';
import { EXTENSION_REDIRECT, startWorld, type World } from '../support/world.ts';

/**
 * Where the session token lives, seen from a content script (issue 38, item 3). The end-to-end
 * build's storage probe (extension/src/testing/storage-probe.content.ts), on a listed origin,
 * plays a compromised renderer: it reads every storage area it can reach and finds no session
 * token; it writes a token of its own (a real session of the attacker's, with another license)
 * into storage.local under the old key and shape, and the background goes on with the user's
 * session, as it does after a browser restart. Failure logs: test-results/e2e/storage/.
 */
const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const results = fileURLToPath(new URL('../../test-results/e2e/storage/', import.meta.url));

const LISTED = '127.0.0.1';
const MINE = 'lic-1001';
const THEIRS = 'lic-1002';
const card = (status?: string) =>
  `[data-testid="connection-card"]${status ? `[data-status="${status}"]` : ''}`;
const API_PROBE_DONE = '[data-testid="baton-e2e"][data-state="done"]';
const STORAGE_PROBE = '[data-testid="baton-e2e-storage"]';

/** What the storage probe found, as it wrote it into the page. */
interface Found {
  readonly local: { outcome: string; items?: unknown };
  readonly sync: { outcome: string; items?: unknown };
  readonly session: { outcome: string; items?: unknown; error?: string };
  readonly databases: unknown;
  readonly planted: string;
}

const BROWSERS = [
  {
    name: 'chromium',
    launch: (options: LaunchOptions) => launchChromium(output('chrome-mv3'), options),
    // "Access to storage is not allowed from this context": the area is for trusted contexts.
    sessionArea: 'refused',
  },
  {
    name: 'firefox',
    launch: (options: LaunchOptions) =>
      launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID, options),
    // Firefox gives content scripts no storage.session at all.
    sessionArea: 'absent',
  },
] as const;

describe.each(BROWSERS)('in $name', ({ name, launch, sessionArea }) => {
  let world: World;
  let pages: IntegratorPages;
  let profile: string;
  let browser: ExtensionBrowser;
  let popup: UiPage;
  let token: string | undefined;
  let connectionId: string | null = null;

  beforeAll(async () => {
    await mkdir(results, { recursive: true });
    world = await startWorld({
      brokers: { processes: 1, ports: [port] },
      // The built extension's redirect URLs, and the one the attacker's script stops at.
      extensionRedirectUrls: [...DEV_EXTENSION_REDIRECT_URLS, EXTENSION_REDIRECT].join(','),
    });
    pages = await serveIntegratorPages([LISTED]);
    profile = await mkdtemp(join(tmpdir(), `baton-storage-${name}-`));
    browser = await launch({ profile });
    popup = await browser.openPopup();
    await popup.waitFor('[data-testid="connect-button"]');
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    const label = `${name}-${context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}`;
    await writeFile(
      join(results, `FAILED-${label}.log`),
      [...browser.console, '--- broker ---', ...world.processes[0]!.lines].join('\n'),
    );
  });

  afterAll(async () => {
    await browser?.close();
    await pages?.[Symbol.asyncDispose]();
    await world?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  /** Opens the storage probe's page (with `query`) and reads what it found. */
  async function probeStorage(query?: string): Promise<{ found: Found; text: string }> {
    const page = await browser.openUrl(pages.url(LISTED, query, STORAGE_PROBE_PATH));
    await page.waitFor(`${STORAGE_PROBE}[data-state="done"]`);
    const [text = ''] = await page.texts(STORAGE_PROBE);
    await page.close();
    return { found: JSON.parse(text) as Found, text };
  }

  /** The connections the background serves a listed page's content script (api.connections). */
  async function servedToPages(): Promise<(string | null)[]> {
    const page = await browser.openUrl(pages.url(LISTED));
    await page.waitFor(API_PROBE_DONE);
    const ids = await page.attributes(
      '[data-testid="baton-e2e"] [data-testid="user"]',
      'data-connection-id',
    );
    await page.close();
    return ids;
  }

  /**
   * The connections the background lists once it has refreshed them from the broker, with the
   * session it holds: asked from the popup, as the popup's refresh button does (view.refresh
   * answers when the refresh is done), then shown as cards.
   */
  async function refreshedConnections(): Promise<string[]> {
    const reply = await popup.evaluate<{
      ok: boolean;
      value?: { signedIn: boolean; connections: { id: string; status: string }[] };
    }>(
      `(globalThis.browser ?? globalThis.chrome).runtime.sendMessage({ type: 'view.refresh', data: null })`,
    );
    expect(reply.ok).toBe(true);
    return (reply.value?.connections ?? [])
      .filter((c) => c.status === 'connected')
      .map((c) => c.id);
  }

  /** A session of the attacker's own at the same broker, with the other license: its token. */
  async function attackerSession(): Promise<string> {
    const broker = world.processes[0]!.url;
    const client = new Client({ publicUrl: broker, instances: [broker] });
    world.sandbox.sandbox.control.setConsent({ mode: 'approve', licenseId: THEIRS });
    try {
      const flow = await startAuth(client, 0);
      const { final } = await client.navigate(await consent(flow), 0);
      const handoff = final.searchParams.get('handoff');
      if (handoff === null) throw new Error(`the attacker's flow ended with ${final.href}`);
      const response = await redeemAt(client, 0, handoff, flow.verifier);
      expect(response.status).toBe(201);
      return ((await response.json()) as { session_token: string }).session_token;
    } finally {
      world.sandbox.sandbox.control.reset();
    }
  }

  it('a content script on a listed origin reads every storage area it can reach and finds no session token', async () => {
    await signInAtSandbox(browser, popup, world.sandbox.url, { licenseId: MINE });
    await popup.waitFor(card('connected'));
    [connectionId = null] = await popup.attributes(card(), 'data-connection-id');

    const { found, text } = await probeStorage();

    expect(sessionTokensIn(text)).toEqual([]);
    token = await extensionSessionToken(popup);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(text).not.toContain(token!);
    // It can read storage.local and storage.sync (which is why the token is not there)…
    expect(found.local.outcome).toBe('read');
    expect(found.sync.outcome).toBe('read');
    // …and not storage.session, which only the extension's own contexts reach.
    expect(found.session.outcome).toBe(sessionArea);
    // Its indexedDB is the page's: the extension's database is not among those it sees.
    expect(found.databases).toEqual([]);
  });

  it('a token it writes into storage.local, in the old shape, changes nothing: now and after a restart', async () => {
    expect(connectionId).not.toBeNull();
    const theirs = await attackerSession();
    expect(theirs).not.toBe(token);

    const { found } = await probeStorage(
      new URLSearchParams({ plant: theirs, broker: world.processes[0]!.url }).toString(),
    );

    expect(found.planted).toBe('written');
    // The running background goes on with the user's session, for the popup and for the pages.
    expect(await refreshedConnections()).toEqual([connectionId]);
    await popup.waitFor(card('connected'));
    expect(await servedToPages()).toEqual([connectionId]);
    expect(await extensionSessionToken(popup)).toBe(token);

    // So does the next one, after a browser restart (which migrates storage.local afresh).
    await browser.close();
    browser = await launch({ profile });
    popup = await browser.openPopup();
    expect(await refreshedConnections()).toEqual([connectionId]);
    await popup.waitFor(card('connected'));
    expect(await servedToPages()).toEqual([connectionId]);
    expect(await extensionSessionToken(popup)).toBe(token);
    // And storage.local no longer holds the planted token.
    const after = await probeStorage();
    expect(after.text).not.toContain(theirs);
    expect(after.text).not.toContain(token!);
  });
});
