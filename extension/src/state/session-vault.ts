/**
 * Where the session token lives: the extension origin's IndexedDB, not `storage.local`.
 *
 * A content script runs in the page's renderer process. In Chrome it may read and write
 * `storage.local` (only `storage.session` can be closed to it, with `setAccessLevel`), and in
 * Firefox `storage.local` cannot be closed to it at all. The IndexedDB of the extension's origin
 * (`chrome-extension://<id>`, `moz-extension://<uuid>`) is opened only by the extension's own
 * contexts: the background, the popup and the options page; a content script's `indexedDB` is the
 * page's. The database survives browser restarts in both browsers, and opens in Chrome's service
 * worker and Firefox's background page alike.
 *
 * Only the background opens it. Nothing else of the extension's state is here: the settings and
 * the last sign-in language stay in `storage.local` (persisted.ts), which holds no secret.
 */
export interface StoredSession {
  readonly sessionToken: string;
  /** The broker that issued the token, normalised; the token is sent nowhere else. */
  readonly brokerUrl: string;
}

export interface SessionVault {
  /**
   * The session kept; null: none; undefined: the vault was never written (a new profile, or a
   * build from before the vault that has not started yet). persisted.ts tells the two apart.
   */
  read(): Promise<StoredSession | null | undefined>;
  /** Keeps `session` (null: none), durably, before it resolves. */
  write(session: StoredSession | null): Promise<void>;
}

export const VAULT_DATABASE = 'baton';
export const VAULT_STORE = 'secrets';
/** The one record: `StoredSession | null`. */
export const VAULT_SESSION_KEY = 'session';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isNonEmptyString = (value: unknown): value is string =>
  typeof value === 'string' && value !== '';

/** A kept record read defensively: anything but a whole session is no session. */
export function parseStoredSession(value: unknown): StoredSession | null | undefined {
  if (value === undefined) return undefined;
  if (!isRecord(value)) return null;
  const { sessionToken, brokerUrl } = value;
  return isNonEmptyString(sessionToken) && isNonEmptyString(brokerUrl)
    ? { sessionToken, brokerUrl }
    : null;
}

/** A request's result, or its error. */
function settled<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB request failed'));
  });
}

/**
 * The vault in an IndexedDB database of `factory` (the background's `indexedDB`; a fake one in the
 * unit tests). The connection is opened on first use and again after the browser closed it.
 */
export function indexedDbSessionVault(factory: IDBFactory): SessionVault {
  let connection: Promise<IDBDatabase> | undefined;

  function open(): Promise<IDBDatabase> {
    connection ??= (async () => {
      const request = factory.open(VAULT_DATABASE, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(VAULT_STORE);
      const db = await settled(request);
      const forget = () => {
        connection = undefined;
        db.close();
      };
      db.onversionchange = forget;
      db.onclose = forget;
      return db;
    })().catch((error: unknown) => {
      connection = undefined;
      throw error;
    });
    return connection;
  }

  /** Runs one request in a transaction of its own and resolves once that has committed. */
  async function run<T>(
    mode: IDBTransactionMode,
    request: (store: IDBObjectStore) => IDBRequest<T>,
  ): Promise<T> {
    const db = await open();
    // `strict`: committed to disk before it resolves, so that the copy in storage.local is
    // removed only after this one is safe (a browser that honours only `relaxed` ignores it).
    const transaction = db.transaction(VAULT_STORE, mode, { durability: 'strict' });
    const result = settled(request(transaction.objectStore(VAULT_STORE)));
    await new Promise<void>((resolve, reject) => {
      transaction.oncomplete = () => resolve();
      transaction.onabort = transaction.onerror = () =>
        reject(transaction.error ?? new Error('IndexedDB transaction failed'));
    });
    return result;
  }

  return {
    read: async () =>
      parseStoredSession(await run('readonly', (store) => store.get(VAULT_SESSION_KEY))),
    async write(session) {
      await run('readwrite', (store) =>
        store.put(
          session === null
            ? null
            : { sessionToken: session.sessionToken, brokerUrl: session.brokerUrl },
          VAULT_SESSION_KEY,
        ),
      );
    },
  };
}
