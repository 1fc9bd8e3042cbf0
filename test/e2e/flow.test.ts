import { DEMO_PASSWORD } from '@baton/sandbox';
import { BROKER_ERROR_HEADER, DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  launchChromium,
  launchFirefox,
  type ExtensionBrowser,
  type UiPage,
} from '../support/browsers.ts';
import { extensionSessionToken, extensionStorage } from '../support/extension-storage.ts';
import { startWorld, type World } from '../support/world.ts';
import { dumpRedis } from '../support/leaks.ts';
import { until } from '../support/wait.ts';

const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const resultsRoot = fileURLToPath(new URL('../../test-results/e2e/', import.meta.url));

const ACCOUNT = 'lotte.vermeulen@example.be';
const FIRST = 'lic-1001';
const SECOND = 'lic-1002';

const card = (id?: string, status?: string) =>
  `[data-testid="connection-card"]${id ? `[data-connection-id="${id}"]` : ''}${status ? `[data-status="${status}"]` : ''}`;

/** Things that break when a window closes under a click: the flow finished, which is fine. */
const closedUnderUs = (error: unknown) => {
  if (!/closed|detached|Target|destroyed|No target|context/i.test(String(error))) throw error;
};

describe.each([
  { name: 'chromium', launch: () => launchChromium(output('chrome-mv3')) },
  { name: 'firefox', launch: () => launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID) },
])('in $name', ({ name, launch }) => {
  let world: World;
  let browser: ExtensionBrowser;
  let popup: UiPage;
  const shots = join(resultsRoot, name);
  let step = 0;
  let firstId: string | null = null;
  const shot = async (label: string) => {
    step += 1;
    await popup.screenshot(join(shots, `${String(step).padStart(2, '0')}-${label}.png`));
  };

  beforeAll(async () => {
    await mkdir(shots, { recursive: true });
    console.log(`[e2e] ${name} screenshots: ${shots}`);
    world = await startWorld({
      brokers: { processes: 1, ports: [port] },
      extensionRedirectUrls: null,
      // A browser's sign-ins back to back: a fast host makes more than 60 a minute on /auth.
      env: { AUTH_RATE_LIMIT: '600' },
    });
    browser = await launch();
    popup = await browser.openPopup();
    await popup.waitFor('[data-testid="connect-button"]');
  });

  afterEach(async (context) => {
    if (context.task.result?.state !== 'fail') return;
    const label = context.task.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60);
    await popup.screenshot(join(shots, `FAILED-${label}.png`)).catch(() => {});
    await writeFile(
      join(shots, `FAILED-${label}.log`),
      [...browser.console, '--- broker ---', ...world.processes[0]!.lines].join('\n'),
    );
  });

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  const sandbox = () => world.sandbox.sandbox.control;

  /** Press a button that starts the flow and go through the sandbox's real pages. */
  async function authorizeThrough(
    button: string,
    licenseId: string,
    decision: 'authorize' | 'deny' = 'authorize',
  ) {
    const window = await browser.authWindow(() => popup.click(button), world.sandbox.url);
    await window.waitFor('#email');
    await window.fill('#email', ACCOUNT);
    await window.fill('#password', DEMO_PASSWORD);
    await window.click('#login');
    await window.waitFor(`#license-${licenseId}`);
    await window.click(`#license-${licenseId}`);
    await window.click('#continue');
    await window.waitFor(`#${decision}`);
    await window.click(`#${decision}`).catch(closedUnderUs);
  }

  /** Everything the extension keeps: its storage areas and its origin's IndexedDB. */
  const storedState = (): Promise<string> => extensionStorage(popup);
  const sessionToken = (): Promise<string | undefined> => extensionSessionToken(popup);

  /** Each case starts here: signed out, the sandbox's counters and faults reset. */
  async function signedOut(): Promise<void> {
    if ((await popup.count('[data-testid="sign-out-button"]')) > 0) {
      await popup.click('[data-testid="sign-out-button"]');
      await popup.waitFor('[data-testid="signed-out"]');
    }
    sandbox().reset();
  }

  /** Signed out, then these licenses connected through the real pages, in this order. */
  async function connected(...licenses: string[]): Promise<void> {
    await signedOut();
    for (const [index, license] of licenses.entries()) {
      await authorizeThrough('[data-testid="connect-button"]', license);
      if (index === 0) {
        await popup.waitFor(card(undefined, 'connected'));
        [firstId = null] = await popup.attributes(card(), 'data-connection-id');
      }
      await until(async () => (await popup.count(card(undefined, 'connected'))) === index + 1, {
        deadlineMs: 30_000,
        what: `license ${license} to show as connected`,
      });
    }
    await popup.waitForGone('[aria-busy="true"]');
    sandbox().reset();
  }

  it('connects a license through the real login and license picker, and shows its user', async () => {
    await signedOut();
    await shot('signed-out');
    await authorizeThrough('[data-testid="connect-button"]', FIRST);
    await popup.waitFor(card(undefined, 'connected'));
    await popup.waitFor('[data-testid="user-name"]', 'Lotte Vermeulen');
    await popup.waitFor('[data-testid="license-name"]', 'Bakkerij Vermeulen');
    await shot('connected');
    expect(sandbox().counters().code_exchanges).toBe(1);
    [firstId = null] = await popup.attributes(card(), 'data-connection-id');
    expect(firstId).toBeTruthy();

    // The extension holds no provider token and no client secret, in storage or in its bundle.
    const stored = await storedState();
    const bundle = await readBundle(output(name === 'chromium' ? 'chrome-mv3' : 'firefox-mv3'));
    for (const secret of sandbox().secrets()) {
      expect(stored).not.toContain(secret);
      expect(bundle).not.toContain(secret);
    }
  });

  it('a second license joins the same session and both show', async () => {
    await connected(FIRST);
    const tokenBefore = await sessionToken();
    await authorizeThrough('[data-testid="connect-button"]', SECOND);
    await popup.waitFor('[data-testid="license-name"]', 'Vermeulen & Zonen Vastgoed');
    expect(await popup.count(card(undefined, 'connected'))).toBe(2);
    expect(await sessionToken()).toBe(tokenBefore);
    await shot('two-licenses');
  });

  it('says so when the user denies access, and stores nothing', async () => {
    await connected(FIRST, SECOND);
    const keysBefore = (await dumpRedis(world.redis.url)).filter((line) =>
      line.includes(':connection:'),
    );
    const exchanges = sandbox().counters().code_exchanges;
    await authorizeThrough('[data-testid="connect-button"]', FIRST, 'deny');
    // The status line already shows "Waiting for you to sign in" while the window is open: wait
    // for the denial itself, or a fast read races the flow's end.
    await popup.waitFor(
      '[data-testid="status"][data-state="denied"] [data-testid="status-message"]',
    );
    expect((await popup.texts('[data-testid="status-message"]')).join(' ')).toMatch(
      /denied|refused|declined/i,
    );
    await shot('access-denied');
    expect(sandbox().counters().code_exchanges).toBe(exchanges);
    const keysAfter = (await dumpRedis(world.redis.url)).filter((line) =>
      line.includes(':connection:'),
    );
    expect(keysAfter.length).toBe(keysBefore.length);
    expect(await popup.count(card())).toBe(2);
  });

  it('keeps showing data when the access token expires, with exactly one refresh', async () => {
    await connected(FIRST, SECOND);
    sandbox().expireAccessTokens(FIRST);
    await popup.click('[data-testid="refresh-button"]');
    await popup.waitFor('[data-testid="user-name"]', 'Lotte Vermeulen');
    await popup.waitForGone('[aria-busy="true"]');
    expect(await popup.count(card(undefined, 'connected'))).toBe(2);
    expect(sandbox().counters().refreshes).toBe(1);
    expect(sandbox().counters().reuse_detected).toBe(0);
    await shot('after-refresh');
  });

  it('a license whose API answers 401 to everything shows it on its card; the rest stays', async () => {
    await connected(FIRST, SECOND);
    const tokenBefore = await sessionToken();
    const secondId = (await popup.attributes(card(), 'data-connection-id')).find(
      (id) => id !== firstId,
    );
    if (!secondId) throw new Error('the second license has no card');
    sandbox().addFault({
      target: 'api',
      kind: 'status',
      status: 401,
      licenseId: SECOND,
      headers: { [BROKER_ERROR_HEADER]: 'invalid_session' },
      body: JSON.stringify({ error: 'invalid_session', message: 'from the license API' }),
    });
    try {
      await popup.click('[data-testid="refresh-button"]');
      await popup.waitFor(`${card(secondId)} [data-testid="user-problem"]`);
      await popup.waitForGone('[aria-busy="true"]');
      await shot('one-license-refused');
      expect(await popup.count(card(undefined, 'connected'))).toBe(2);
      expect(await popup.count(`${card(firstId!)} [data-testid="user-problem"]`)).toBe(0);
      await popup.waitFor(`${card(firstId!)} [data-testid="user-name"]`, 'Lotte Vermeulen');
      expect(await sessionToken()).toBe(tokenBefore);
    } finally {
      sandbox().clearFaults();
    }
  });

  it('shows a revoked grant as disconnected, and Reconnect restores it with the same id', async () => {
    await connected(FIRST, SECOND);
    sandbox().revokeGrant(FIRST);
    sandbox().expireAccessTokens(FIRST);
    await popup.click('[data-testid="refresh-button"]');
    await popup.waitFor(card(undefined, 'disconnected'));
    await popup.waitFor('[data-testid="reconnect-button"]');
    await shot('disconnected');
    expect(await popup.attributes(card(undefined, 'disconnected'), 'data-connection-id')).toEqual([
      firstId,
    ]);

    await authorizeThrough(`${card(firstId!)} [data-testid="reconnect-button"]`, FIRST);
    await popup.waitFor(card(firstId!, 'connected'));
    expect(await popup.count(card(undefined, 'connected'))).toBe(2);
    await shot('reconnected');
  });

  it('a grant revoked right after a refresh shows as disconnected at once, with Reconnect', async () => {
    await connected(FIRST, SECOND);
    sandbox().expireAccessTokens(FIRST);
    await popup.click('[data-testid="refresh-button"]');
    await popup.waitForGone('[aria-busy="true"]');
    expect(sandbox().counters().refreshes).toBe(1);
    // Seconds after that refresh, well within the refresh budget's window: the 401 still
    // refreshes, the refresh is refused, and the connection is disconnected.
    sandbox().revokeGrant(FIRST);
    await popup.click('[data-testid="refresh-button"]');
    await popup.waitFor(card(firstId!, 'disconnected'));
    await popup.waitFor(`${card(firstId!)} [data-testid="reconnect-button"]`);
    expect(await popup.count(`${card(firstId!)} [data-testid="user-problem"]`)).toBe(0);
    expect(await popup.count(card(undefined, 'connected'))).toBe(1);
    await shot('revoked-after-refresh');
  });

  it('disconnect and sign out remove everything, at the broker and in Redis', async () => {
    await connected(FIRST, SECOND);
    const token = await sessionToken();
    expect(token).toBeDefined();
    const sid = createHash('sha256').update(token!).digest('base64url');
    await popup.click(`${card(firstId!)} [data-testid="disconnect-button"]`);
    await popup.waitForGone(card(firstId!));
    expect(await popup.count(card())).toBe(1);
    await shot('one-disconnected');

    await popup.click('[data-testid="sign-out-button"]');
    await popup.waitFor('[data-testid="signed-out"]');
    await shot('signed-out-again');
    const connections = await fetch(`${world.processes[0]!.url}/connections`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(connections.status).toBe(401);
    expect((await dumpRedis(world.redis.url)).filter((line) => line.includes(sid))).toEqual([]);
    expect(await sessionToken()).toBeUndefined();
  });
});

async function readBundle(dir: string): Promise<string> {
  const files = await readdir(dir, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(
    files
      .filter((entry) => entry.isFile() && /\.(js|json|html|css)$/.test(entry.name))
      .map((entry) => readFile(join(entry.parentPath, entry.name), 'utf8')),
  );
  expect(texts.length).toBeGreaterThan(0);
  return texts.join('\n');
}
