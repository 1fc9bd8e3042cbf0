import { browser } from 'wxt/browser';
import { defineContentScript } from 'wxt/utils/define-content-script';

/**
 * A content script built only for the end-to-end tests (BATON_E2E=1; wxt.config.ts refuses it in a
 * release build), on a listed origin, acting as a compromised renderer would: it reads every
 * storage area it can reach (storage.local, .sync, .session) and lists the IndexedDB databases
 * its own `indexedDB` shows, and, when the page's URL says `?plant=<token>&broker=<url>`, writes
 * that token into storage.local under the old key and shape (local:state v3). It writes what it
 * found into the page as JSON, where test/e2e/storage.test.ts reads it.
 */
export const E2E_STORAGE_PROBE_MATCHES = ['http://127.0.0.1/baton-e2e-storage/*'];

export default defineContentScript({
  matches: E2E_STORAGE_PROBE_MATCHES,
  main: () => void probe(),
});

type AreaName = 'local' | 'sync' | 'session';

/** What reading `name` gave: its items, or why not (the area missing, or the call refused). */
async function readArea(name: AreaName): Promise<Record<string, unknown>> {
  try {
    const area = (
      browser.storage as Partial<Record<AreaName, { get(keys: null): Promise<object> }>>
    )[name];
    if (area === undefined) return { outcome: 'absent' };
    return { outcome: 'read', items: await area.get(null) };
  } catch (error) {
    return { outcome: 'refused', error: String(error) };
  }
}

async function databases(): Promise<unknown> {
  try {
    return (await indexedDB.databases()).map((database) => database.name ?? '');
  } catch (error) {
    return `refused: ${String(error)}`;
  }
}

async function plant(params: URLSearchParams): Promise<string> {
  const token = params.get('plant');
  if (token === null) return 'nothing';
  try {
    await browser.storage.local.set({
      state: {
        settings: { brokerUrl: null, locale: null },
        session: { sessionToken: token, brokerUrl: params.get('broker') ?? '' },
        lastSignInLocale: null,
      },
      state$: { v: 3 },
    });
    return 'written';
  } catch (error) {
    return `refused: ${String(error)}`;
  }
}

async function probe(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const planted = await plant(params);
  const found = {
    local: await readArea('local'),
    sync: await readArea('sync'),
    session: await readArea('session'),
    databases: await databases(),
    planted,
  };
  const out = document.createElement('pre');
  out.dataset['testid'] = 'baton-e2e-storage';
  out.textContent = JSON.stringify(found);
  document.body.append(out);
  out.dataset['state'] = 'done';
}
