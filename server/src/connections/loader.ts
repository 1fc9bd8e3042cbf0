import type { Logger } from 'pino';
import { notFound } from '../base/errors.ts';
import { checkApiUrl, type Allowlist } from '../oauth/allowlist.ts';
import type { ConnectionRecord, ConnectionRepository, LoadedConnection } from './records.ts';

/**
 * Loads a connection of a session, re-checked against the allowlist on every use: once per record
 * read, by the identity rule of records.ts (the allowlist is fixed at start-up). From the
 * client-side cache when it holds it, as the session check is (see Store.getVersioned).
 */
export function createConnectionLoader(deps: {
  /** API_URL_ALLOWLIST, fixed at start-up. */
  allowlist: Allowlist;
  connections: ConnectionRepository;
  log: Logger;
}) {
  const { allowlist, connections, log } = deps;
  const allowed = new WeakMap<ConnectionRecord, boolean>();
  const stillAllowed = (record: ConnectionRecord): boolean => {
    let verdict = allowed.get(record);
    if (verdict === undefined) {
      verdict = checkApiUrl(record.apiUrl, allowlist) !== undefined;
      allowed.set(record, verdict);
    }
    return verdict;
  };

  return async function load(sid: string, id: string): Promise<LoadedConnection> {
    const loaded = await connections.load(sid, id, { cached: true });
    if (!loaded) throw notFound('Connection');
    const { record } = loaded;
    if (record.status === 'connected' && !stillAllowed(record)) {
      const next: ConnectionRecord = {
        id: record.id,
        apiUrl: record.apiUrl,
        connectedAt: record.connectedAt,
        status: 'disconnected',
        disconnectedReason: 'api_url_not_allowed',
      };
      log.warn({ connection: id }, 'stored api_url is no longer allowed; connection disconnected');
      if (await connections.save(sid, next, loaded.version))
        return { record: next, version: loaded.version + 1 };
      return load(sid, id);
    }
    return loaded;
  };
}
export type ConnectionLoader = ReturnType<typeof createConnectionLoader>;
