import { DecryptError } from '../base/crypto.ts';
import { BrokerError } from '../base/errors.ts';
import { endSession } from '../connections/end-session.ts';
import { eventConnection } from '../connections/events.ts';
import type { ConnectionRecord, ConnectionRepository } from '../connections/records.ts';
import { createRefreshBackoff } from '../connections/refresh/refresh-backoff.ts';
import type { Sessions } from '../connections/sessions.ts';
import { sessionRef } from '../ops/events.ts';
import type { Store } from '../store/types.ts';
import type { RecordAction } from './actions.ts';
import type { ActionResult, Actor, ConnectionQuery, ConnectionView } from './types.ts';
import { AdminInputError, checkConnectionId, type Walks } from './walk.ts';

/** Attempts at the versioned write of a disconnection (another writer each time). */
const DISCONNECT_ATTEMPTS = 5;
const NOT_FOUND: ActionResult = { ok: false, count: 0, error: 'not_found' };
const iso = (ms: number): string => new Date(ms).toISOString();

/** A licence as records hold it: an absolute URL (the exact api_url is matched, nothing less). */
function checkLicence(licence: string): string {
  if (licence.length > 2048 || URL.parse(licence) === null)
    throw new AdminInputError(
      'a licence is its api_url: an absolute URL of at most 2,048 characters',
    );
  return licence;
}

/**
 * Connections as an operator finds and changes them: found by id, by session reference or by
 * licence; disconnected; their sessions ended. Every change goes through the same writes as the
 * user's own (records.ts, end-session.ts), with the same events, and is recorded as `admin.action`.
 */
export function createAdminConnections(deps: {
  store: Store;
  sessions: Sessions;
  connections: ConnectionRepository;
  walks: Walks;
  recordAction: RecordAction;
  now: () => number;
}) {
  const { store, sessions, connections, walks, recordAction, now } = deps;
  const backoffs = createRefreshBackoff({ store, now });

  /** Why the last refresh did not store a pair, or ok; null when none was tried since it was made. */
  async function refreshOutcome(
    sid: string,
    record: ConnectionRecord,
  ): Promise<ConnectionView['lastRefreshOutcome']> {
    const reason = record.disconnectedReason;
    if (reason === 'refresh_rejected' || reason === 'refresh_response_lost') return 'rejected';
    if (record.refreshLost === true) return 'lost';
    if (backoffs.holds(await backoffs.of(sid, record.id))) return 'transient';
    return record.refreshedAt === undefined ? null : 'ok';
  }

  /** The view of one connection, or null when it is gone or cannot be opened (a key missing). */
  async function view(sid: string, id: string): Promise<ConnectionView | null> {
    // Loading seals a record under an old key again, as every read does: keyId is read after.
    const loaded = await opened(sid, id);
    const sealed = await connections.sealed(sid, id);
    if (!loaded || !sealed) return null;
    const { record } = loaded;
    const usage = await sessions.usage(sid);
    return {
      id,
      sessionRef: sessionRef(sid),
      licence: record.apiUrl,
      status: record.status,
      createdAt: iso(record.connectedAt),
      lastRefreshAt: record.refreshedAt === undefined ? null : iso(record.refreshedAt),
      lastRefreshOutcome: await refreshOutcome(sid, record),
      disconnectedReason: record.disconnectedReason ?? null,
      lastUsedAt: iso(usage?.renewedAt ?? usage?.createdAt ?? record.connectedAt),
      keyId: sealed.value.split('.')[0] ?? '?',
    };
  }

  /** The connections a query names, as (session, connection) pairs, up to `limit`. */
  async function located(query: ConnectionQuery, limit: number): Promise<[string, string][]> {
    if ('connectionId' in query)
      return (await walks.holdersOf(query.connectionId)).map((sid) => [sid, query.connectionId]);
    if ('sessionRef' in query) {
      const sid = await walks.sessionOf(query.sessionRef);
      return sid === null ? [] : (await connections.ids(sid)).map((id) => [sid, id]);
    }
    // Members of the licence's hash: hashes collide, so each record's api_url is checked.
    const members = await connections.ofLicence(checkLicence(query.licence));
    const found: [string, string][] = [];
    for (const { sid, id } of members) {
      if (found.length >= limit) break;
      const loaded = await opened(sid, id);
      if (loaded?.record.apiUrl === query.licence) found.push([sid, id]);
    }
    return found;
  }

  /** A record, or null when it is gone or cannot be opened (sealed under a key not configured). */
  function opened(sid: string, id: string) {
    return connections.load(sid, id).catch((error: unknown) => {
      if (error instanceof DecryptError) return null;
      throw error;
    });
  }

  /** Sessions holding the licence, each once. */
  async function holdersOfLicence(licence: string): Promise<string[]> {
    return [...new Set((await located({ licence }, Infinity)).map(([sid]) => sid))];
  }

  /** Marks one connection disconnected by an operator; false when it is not there. */
  async function disconnectOne(sid: string, id: string): Promise<boolean> {
    for (let attempt = 0; attempt < DISCONNECT_ATTEMPTS; attempt++) {
      const loaded = await connections.load(sid, id);
      if (!loaded) return false;
      const { record } = loaded;
      if (record.status === 'disconnected') return true;
      const reason = 'disconnected_by_operator';
      // Its tokens go; when it last refreshed stays, for whoever looks next.
      const next: ConnectionRecord = {
        id,
        apiUrl: record.apiUrl,
        connectedAt: record.connectedAt,
        status: 'disconnected',
        disconnectedReason: reason,
        ...(record.refreshedAt === undefined ? {} : { refreshedAt: record.refreshedAt }),
      };
      const event = {
        type: 'connection.disconnected',
        connection: { ...eventConnection(record), reason },
      } as const;
      if (await connections.save(sid, next, loaded.version, event)) {
        await backoffs.clear(sid, id);
        return true;
      }
    }
    throw new BrokerError('server_error', 'could not write the disconnection', { expose: false });
  }

  async function endSessions(sids: readonly string[]): Promise<number> {
    for (const sid of sids) await endSession({ sessions, connections }, sid, 'revoked');
    return sids.length;
  }

  return {
    async find(query: ConnectionQuery, limit: number): Promise<ConnectionView[]> {
      const views: ConnectionView[] = [];
      for (const [sid, id] of await located(query, limit)) {
        if (views.length >= limit) break;
        const each = await view(sid, id);
        if (each) views.push(each);
      }
      return views;
    },

    async disconnect(connectionId: string, actor: Actor): Promise<ActionResult> {
      const sids = await walks.holdersOf(checkConnectionId(connectionId));
      let count = 0;
      for (const sid of sids) if (await disconnectOne(sid, connectionId)) count++;
      if (count === 0) return NOT_FOUND;
      await recordAction(actor, 'disconnect', { connection: connectionId });
      return { ok: true, count };
    },

    async endSession(ref: string, actor: Actor): Promise<ActionResult> {
      const sid = await walks.sessionOf(ref);
      if (sid === null) return NOT_FOUND;
      return this.endSessionOf(sid, actor);
    },

    /** The CLI's `drop-session <sid>`, kept for operators who have a session id from Redis. */
    async endSessionOf(sid: string, actor: Actor): Promise<ActionResult> {
      if (!(await sessions.exists(sid))) return NOT_FOUND;
      await endSessions([sid]);
      await recordAction(actor, 'end_session', { session: sessionRef(sid) });
      return { ok: true, count: 1 };
    },

    async endSessionsOfLicence(licence: string, actor: Actor): Promise<ActionResult> {
      const sids = await holdersOfLicence(checkLicence(licence));
      if (sids.length === 0) return NOT_FOUND;
      const count = await endSessions(sids);
      await recordAction(actor, 'end_sessions_of_licence', { licence, sessions: count });
      return { ok: true, count };
    },
  };
}
export type AdminConnections = ReturnType<typeof createAdminConnections>;
