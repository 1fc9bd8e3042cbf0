import type { UiPage } from './browsers.ts';

/**
 * Everything the extension keeps, as its own pages can read it (run in the popup or the options
 * page, on the extension's origin): storage.local, .session and .sync, and every IndexedDB
 * database of the extension's origin with each store's records. As JSON, to search for a value.
 */
export function extensionStorage(page: UiPage): Promise<string> {
  return page.evaluate<string>(`(async () => {
    const api = globalThis.browser ?? globalThis.chrome;
    const settled = (request) => new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    const indexedDb = {};
    for (const { name } of await indexedDB.databases()) {
      const db = await settled(indexedDB.open(name));
      const stores = {};
      for (const store of db.objectStoreNames)
        stores[store] = await settled(db.transaction(store).objectStore(store).getAll());
      db.close();
      indexedDb[name] = stores;
    }
    return JSON.stringify({
      local: await api.storage.local.get(null),
      session: await api.storage.session.get(null),
      sync: await api.storage.sync.get(null),
      indexedDb,
    });
  })()`);
}

/** The broker's session tokens in `text` (43 base64url characters, under `sessionToken`). */
export function sessionTokensIn(text: string): string[] {
  return [...text.matchAll(/"sessionToken":"([A-Za-z0-9_-]{43})"/g)].map((match) => match[1]!);
}

/**
 * The session token the background keeps, where it keeps it (extension/src/state/session-vault.ts:
 * the IndexedDB of the extension's origin), or undefined when it keeps none.
 */
export async function extensionSessionToken(page: UiPage): Promise<string | undefined> {
  const { indexedDb } = JSON.parse(await extensionStorage(page)) as { indexedDb: unknown };
  const tokens = [...new Set(sessionTokensIn(JSON.stringify(indexedDb)))];
  if (tokens.length > 1) throw new Error(`the extension keeps ${tokens.length} session tokens`);
  return tokens[0];
}
