/**
 * How soon the popup shows the licenses it already knows: milliseconds from opening popup.html to
 * the first license card in its DOM (the popup's `baton:first-card` User Timing mark, which counts
 * from the page's navigation start), in Debian's Chromium and Firefox ESR, with two licenses
 * connected through the sandbox's real pages, on the e2e world (Redis, the sandbox, a broker
 * process). Three cases:
 *
 *   warm       the background running, the last view in storage.session
 *   stopped    Chromium only: the service worker stopped (as Chrome does after 30 s idle); the
 *              popup's first message starts it again
 *   restarted  the browser closed and started again on the same profile (storage.session is
 *              empty); in Chromium the worker is stopped once more after the start, as after a
 *              real restart, where nothing wakes it before the popup. Firefox starts the
 *              background when the test installs the add-on, so there it is running.
 *
 * A measurement: it prints each run and the medians, and asserts nothing. Run it on an idle
 * machine (it builds the extension for its broker first):
 *
 *   node test/bench/popup-timing.ts [--runs 5] [--browsers chromium,firefox]
 */
import { DEV_FIREFOX_GECKO_ID } from '@baton/shared';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { launchChromium, launchFirefox, type ExtensionBrowser } from '../support/browsers.ts';
import { startWorld } from '../support/world.ts';
import { freePort } from '../support/ports.ts';
import { signInAtSandbox } from '../support/sandbox-sign-in.ts';
import { until } from '../support/wait.ts';
import { median } from './scenarios.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    browsers: { type: 'string', default: 'chromium,firefox' },
  },
});
const runs = Number(values.runs);
const browsers = values.browsers.split(',') as ('chromium' | 'firefox')[];

const extensionDir = fileURLToPath(new URL('../../extension/', import.meta.url));
const CARD = '[data-testid="connection-card"]';
const CONNECTED = '[data-testid="connection-card"][data-status="connected"]';

const port = await freePort();
console.log(`building the extension for http://127.0.0.1:${port} …`);
for (const script of ['build', 'build:firefox']) {
  await promisify(execFile)('pnpm', ['run', script], {
    cwd: extensionDir,
    env: { ...process.env, WXT_BROKER_URL: `http://127.0.0.1:${port}` },
  });
}
const world = await startWorld({
  brokers: { processes: 1, ports: [port] },
  extensionRedirectUrls: null,
});

function launcher(name: 'chromium' | 'firefox', profile: string) {
  return name === 'chromium'
    ? () => launchChromium(join(extensionDir, '.output/chrome-mv3'), { profile })
    : () =>
        launchFirefox(join(extensionDir, '.output/firefox-mv3'), DEV_FIREFOX_GECKO_ID, { profile });
}

/** Opens the popup, waits for a card, and reads how long after navigation start it came. */
async function firstCardMs(browser: ExtensionBrowser): Promise<number> {
  const popup = await browser.openPopup();
  try {
    await popup.waitFor(CARD);
    const ms = await popup.evaluate<number | null>(
      `performance.getEntriesByName('baton:first-card')[0]?.startTime ?? null`,
    );
    if (ms === null) throw new Error('the popup set no baton:first-card mark');
    return ms;
  } finally {
    await popup.close();
  }
}

const results: { browser: string; case: string; ms: number[] }[] = [];

async function measure(name: 'chromium' | 'firefox'): Promise<void> {
  const profile = await mkdtemp(join(tmpdir(), `baton-timing-${name}-`));
  const launch = launcher(name, profile);
  let browser = await launch();
  try {
    const popup = await browser.openPopup();
    for (const licenseId of ['lic-1001', 'lic-1002']) {
      const before = await popup.count(CONNECTED);
      await signInAtSandbox(browser, popup, world.sandbox.url, { licenseId });
      await until(async () => (await popup.count(CONNECTED)) === before + 1, {
        deadlineMs: 30_000,
        what: `${licenseId} to show as connected`,
      });
    }
    await popup.waitForGone('[aria-busy="true"]');
    await popup.close();

    const record = (label: string, ms: number[]) => {
      results.push({ browser: name, case: label, ms });
      console.log(`${name} ${label}: ${ms.map((m) => m.toFixed(0)).join(', ')} ms`);
    };

    const warm: number[] = [];
    for (let i = 0; i < runs; i++) warm.push(await firstCardMs(browser));
    record('warm', warm);

    if (name === 'chromium') {
      const stopped: number[] = [];
      for (let i = 0; i < runs; i++) {
        await browser.stopBackground();
        stopped.push(await firstCardMs(browser));
      }
      record('stopped', stopped);
    }

    const restarted: number[] = [];
    for (let i = 0; i < runs; i++) {
      await browser.close();
      browser = await launch();
      if (name === 'chromium') await browser.stopBackground();
      restarted.push(await firstCardMs(browser));
    }
    record('restarted', restarted);
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}

try {
  for (const name of browsers) await measure(name);
} finally {
  await world.close();
}

console.log('\nms from opening the popup to the first licence card (median of %d):', runs);
console.log('browser   case       median  min    max');
for (const r of results) {
  console.log(
    `${r.browser.padEnd(9)} ${r.case.padEnd(10)} ${median(r.ms).toFixed(0).padStart(6)} ${Math.min(
      ...r.ms,
    )
      .toFixed(0)
      .padStart(6)} ${Math.max(...r.ms)
      .toFixed(0)
      .padStart(6)}`,
  );
}
