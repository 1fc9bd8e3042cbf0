import { fakeBrowser } from 'wxt/testing/fake-browser';
import { describe, expect, it } from 'vitest';
import { BROKER, createHarness, LICENSE_B, SESSION_TOKEN, signedIn } from '../testing/harness.ts';

/**
 * Item 3 of issue 38: the session token lives where no content script reaches it. A content script
 * of a listed origin runs in the page's process; it can read and write storage.local (and
 * storage.sync) in both browsers, and storage.session where the extension allows it.
 */
async function readableByContentScripts(): Promise<string> {
  const [local, sync, session] = await Promise.all([
    fakeBrowser.storage.local.get(null),
    fakeBrowser.storage.sync.get(null),
    fakeBrowser.storage.session.get(null),
  ]);
  return JSON.stringify({ local, sync, session });
}

/** A valid session of the attacker's own, at the same broker. */
const PLANTED = 'planted-session-token';

/** What a compromised content script can write into storage.local: the token's old keys and shapes. */
const PLANTS: [string, Record<string, unknown>][] = [
  [
    'the v3 state',
    {
      state: {
        settings: { brokerUrl: null, locale: null },
        session: { sessionToken: PLANTED, brokerUrl: BROKER },
        lastSignInLocale: null,
      },
      state$: { v: 3 },
    },
  ],
  ['the v1 state (flat, no version)', { state: { sessionToken: PLANTED } }],
];

const bearers = (h: { broker: { requests: readonly { authorization: string | null }[] } }) => [
  ...new Set(h.broker.requests.map((r) => r.authorization)),
];

describe('the session token', () => {
  describe('of an install from before (kept in storage.local)', () => {
    it('is moved out of every storage area a content script can read, and the session goes on', async () => {
      const h = await signedIn();

      const view = await h.send['view.refresh'](null);

      expect(view.connections.map((c) => c.id)).toEqual(['conn-a', 'conn-b']);
      expect(bearers(h)).toEqual([`Bearer ${SESSION_TOKEN}`]);
      expect(await readableByContentScripts()).not.toContain(SESSION_TOKEN);
    });

    it('survives a browser restart where it was moved to', async () => {
      await signedIn();

      const h = await createHarness({ restart: true });
      h.broker.seedSession(SESSION_TOKEN, [LICENSE_B]);
      const view = await h.send['view.refresh'](null);

      expect(view.connections.map((c) => c.id)).toEqual(['conn-b']);
      expect(bearers(h)).toEqual([`Bearer ${SESSION_TOKEN}`]);
      expect(await readableByContentScripts()).not.toContain(SESSION_TOKEN);
    });
  });

  describe.each(PLANTS)(
    'when a content script writes %s with a token of its own',
    (_name, plant) => {
      it('the running background goes on with the real one', async () => {
        const h = await signedIn();
        h.broker.seedSession(PLANTED, [LICENSE_B]);

        await fakeBrowser.storage.local.set(plant);
        const view = await h.send['view.refresh'](null);

        expect(view.connections.map((c) => c.id)).toEqual(['conn-a', 'conn-b']);
        expect(bearers(h)).toEqual([`Bearer ${SESSION_TOKEN}`]);
      });

      it('and so does the next one, after a restart, which drops the planted token', async () => {
        await signedIn();
        await fakeBrowser.storage.local.set(plant);

        const h = await createHarness({ restart: true });
        h.broker.seedSession(SESSION_TOKEN, [LICENSE_B]);
        h.broker.seedSession(PLANTED, []);
        const view = await h.send['view.refresh'](null);

        expect(view.connections.map((c) => c.id)).toEqual(['conn-b']);
        expect(bearers(h)).toEqual([`Bearer ${SESSION_TOKEN}`]);
        expect(await readableByContentScripts()).not.toContain(PLANTED);
      });
    },
  );
});
