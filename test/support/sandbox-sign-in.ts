import { DEMO_PASSWORD } from '@baton/sandbox';
import type { ExtensionBrowser, UiPage } from './browsers.ts';

/** The sandbox's account with two licenses (test/sandbox/src/accounts.ts). */
export const DEMO_ACCOUNT = 'lotte.vermeulen@example.be';

/** Things that break when a window closes under a click: the flow finished, which is fine. */
export function closedUnderUs(error: unknown): void {
  if (!/closed|detached|Target|destroyed|No target|context/i.test(String(error))) throw error;
}

/**
 * Presses `button` in `popup` (it starts the flow) and goes through the sandbox's real pages in
 * the authorization window: log in, pick `licenseId`, then authorize or deny.
 */
export async function signInAtSandbox(
  browser: ExtensionBrowser,
  popup: UiPage,
  sandboxUrl: string,
  options: {
    readonly button?: string;
    readonly licenseId: string;
    readonly account?: string;
    readonly decision?: 'authorize' | 'deny';
  },
): Promise<void> {
  const window = await browser.authWindow(
    () => popup.click(options.button ?? '[data-testid="connect-button"]'),
    sandboxUrl,
  );
  await window.waitFor('#email');
  await window.fill('#email', options.account ?? DEMO_ACCOUNT);
  await window.fill('#password', DEMO_PASSWORD);
  await window.click('#login');
  await window.waitFor(`#license-${options.licenseId}`);
  await window.click(`#license-${options.licenseId}`);
  await window.click('#continue');
  const decision = options.decision ?? 'authorize';
  await window.waitFor(`#${decision}`);
  await window.click(`#${decision}`).catch(closedUnderUs);
}
