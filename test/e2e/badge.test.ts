import { DEMO_PASSWORD } from '@baton/sandbox';
import { DEV_FIREFOX_GECKO_ID, routes } from '@baton/shared';
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
import { until } from '../support/wait.ts';

/**
 * The toolbar badge (extension/src/background/badge.ts) and the status check that keeps it true
 * (status-check.ts), in real browsers against the real broker and the sandbox provider. The badge
 * is read through the extension's own API, in one of its pages. The check is triggered by firing
 * its alarm now, as the browser would at its time: the alarm is created again from the page, under
 * the same name, due at once (Chromium's floor for an unpacked extension is 1 s), and the badge is
 * polled up to a generous deadline.
 */
const port = inject('brokerPort');
const output = (name: string) =>
  fileURLToPath(new URL(`../../extension/.output/${name}`, import.meta.url));
const resultsRoot = fileURLToPath(new URL('../../test-results/e2e-badge/', import.meta.url));

const ACCOUNT = 'lotte.vermeulen@example.be';
const FIRST = 'lic-1001';
const ALARM = 'baton.status-check';
const MINUTE = 60_000;
/** How long a check may take to reach the badge on a loaded machine (no timing is assumed). */
const CHECK_DEADLINE_MS = 30_000;

const PLAIN = { text: '', title: 'Baton' };
const RECONNECT = { text: '!', title: 'Baton: a licence needs reconnecting' };
const SESSION_ENDED = {
  text: '!',
  title: 'Baton: your session has ended. Connect your licence again.',
};

const card = (id?: string, status?: string) =>
  `[data-testid="connection-card"]${id ? `[data-connection-id="${id}"]` : ''}${status ? `[data-status="${status}"]` : ''}`;

/** Things that break when a window closes under a click: the flow finished, which is fine. */
const closedUnderUs = (error: unknown) => {
  if (!/closed|detached|Target|destroyed|No target|context/i.test(String(error))) throw error;
};

/** Runs in an extension page: the browser's extension API, whichever browser. */
const API = 'const api = globalThis.browser ?? globalThis.chrome;';

describe.each([
  { name: 'chromium', launch: () => launchChromium(output('chrome-mv3')) },
  { name: 'firefox', launch: () => launchFirefox(output('firefox-mv3'), DEV_FIREFOX_GECKO_ID) },
])('the toolbar badge in $name', ({ name, launch }) => {
  let world: World;
  let browser: ExtensionBrowser;
  let popup: UiPage;
  const shots = join(resultsRoot, name);

  beforeAll(async () => {
    await mkdir(shots, { recursive: true });
    world = await startWorld({
      brokers: { processes: 1, ports: [port] },
      extensionRedirectUrls: null,
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

  /** The toolbar icon's badge text and title, as the extension's API reads them. */
  const badge = () =>
    popup.evaluate<{ text: string; title: string }>(`(async () => { ${API}
      return { text: await api.action.getBadgeText({}), title: await api.action.getTitle({}) };
    })()`);

  /** The status check's alarm, as the browser holds it (null: none). */
  const checkAlarm = () =>
    popup.evaluate<{ scheduledTime: number; periodInMinutes?: number } | null>(`(async () => {
      ${API}
      const alarm = await api.alarms.get(${JSON.stringify(ALARM)});
      return alarm ? { scheduledTime: alarm.scheduledTime, periodInMinutes: alarm.periodInMinutes } : null;
    })()`);

  /** The browser fires the status check's alarm now, instead of within the half hour. */
  const fireCheckNow = () =>
    popup.evaluate<undefined>(`(async () => { ${API}
      await api.alarms.create(${JSON.stringify(ALARM)}, { when: Date.now(), periodInMinutes: 30 });
    })()`);

  async function badgeBecomes(expected: { text: string; title: string }, what: string) {
    await until(
      async () => {
        const now = await badge();
        return now.text === expected.text && now.title === expected.title;
      },
      { deadlineMs: CHECK_DEADLINE_MS, intervalMs: 100, what },
    );
  }

  /** Press a button that starts the flow and go through the sandbox's real pages. */
  async function authorizeThrough(button: string, licenseId: string) {
    const window = await browser.authWindow(() => popup.click(button), world.sandbox.url);
    await window.waitFor('#email');
    await window.fill('#email', ACCOUNT);
    await window.fill('#password', DEMO_PASSWORD);
    await window.click('#login');
    await window.waitFor(`#license-${licenseId}`);
    await window.click(`#license-${licenseId}`);
    await window.click('#continue');
    await window.waitFor('#authorize');
    await window.click('#authorize').catch(closedUnderUs);
  }

  /** Connects FIRST from the signed-out screen; its connection id. */
  async function connectFirst(): Promise<string> {
    await authorizeThrough('[data-testid="connect-button"]', FIRST);
    await popup.waitFor(card(undefined, 'connected'));
    await popup.waitForGone('[aria-busy="true"]');
    const [id] = await popup.attributes(card(), 'data-connection-id');
    if (!id) throw new Error('the licence has no card');
    return id;
  }

  it('a grant revoked at the provider shows at the next check; Reconnect clears it', async () => {
    const firstId = await connectFirst();
    expect(await badge()).toEqual(PLAIN);
    // A session exists: the check is due in 30 minutes ± 20 %, and repeats.
    const alarm = await checkAlarm();
    expect(alarm?.periodInMinutes).toBe(30);
    expect(alarm!.scheduledTime - Date.now()).toBeGreaterThan(23 * MINUTE);
    expect(alarm!.scheduledTime - Date.now()).toBeLessThanOrEqual(36 * MINUTE);

    sandbox().revokeGrant(FIRST);
    // Nothing asks the broker until the check: the badge stays as it was.
    expect(await badge()).toEqual(PLAIN);

    await fireCheckNow();
    await badgeBecomes(RECONNECT, 'the badge to say the licence needs reconnecting');
    // The popup, open all along and never refreshed by hand, shows what the check found.
    await popup.waitFor(card(firstId, 'disconnected'));
    await popup.screenshot(join(shots, '1-badge-reconnect.png'));
    // The check set the next one, a period away.
    expect((await checkAlarm())!.scheduledTime - Date.now()).toBeGreaterThan(23 * MINUTE);

    await authorizeThrough(`${card(firstId)} [data-testid="reconnect-button"]`, FIRST);
    await popup.waitFor(card(firstId, 'connected'));
    await badgeBecomes(PLAIN, 'the badge to clear once the licence is reconnected');
  });

  it('a session the broker ended shows at the next check; signing in again clears it', async () => {
    const token = await extensionSessionToken(popup);
    expect(token).toBeDefined();
    // The session ends at the broker (it expired, or an administrator ended it).
    const ended = await fetch(new URL(routes.session, world.processes[0]!.url), {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(ended.status).toBe(204);
    expect(await badge()).toEqual(PLAIN);

    await fireCheckNow();
    await badgeBecomes(SESSION_ENDED, 'the badge to say the session has ended');
    await popup.waitFor('[data-testid="signed-out"]');
    await popup.screenshot(join(shots, '2-badge-session-ended.png'));
    // No session, no check.
    expect(await checkAlarm()).toBeNull();

    await connectFirst();
    await badgeBecomes(PLAIN, 'the badge to clear once signed in again');
    expect((await checkAlarm())?.periodInMinutes).toBe(30);

    // A deliberate sign-out leaves no badge, and no check.
    await popup.click('[data-testid="sign-out-button"]');
    await popup.waitFor('[data-testid="signed-out"]');
    expect(await badge()).toEqual(PLAIN);
    expect(await checkAlarm()).toBeNull();
  });
});
