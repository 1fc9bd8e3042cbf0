import { randomToken } from '../base/crypto.ts';
import { BrokerError, invalidSession, notFound } from '../base/errors.ts';
import type { Handoffs } from '../oauth/handoff.ts';
import type { TokenSet } from '../oauth/provider.ts';
import type { Store } from '../store/types.ts';
import { eventConnection, type BrokerEvent } from './events.ts';
import { endSession } from './end-session.ts';
import type { ConnectionLoader } from './loader.ts';
import type { ConnectionRecord, ConnectionRepository, LoadedConnection } from './records.ts';
import { createRefreshBackoff } from './refresh/refresh-backoff.ts';
import type { Sessions } from './sessions.ts';

/** A change of one connection, as its event reports it. */
const connectionEvent = (
  type: 'connection.created' | 'connection.reconnected' | 'connection.removed',
  record: Pick<ConnectionRecord, 'id' | 'apiUrl'>,
): BrokerEvent => ({ type, connection: eventConnection(record) });

/** Attempts at the compare-and-set of a connection before giving up (another writer each time). */
const UPSERT_ATTEMPTS = 5;

/**
 * What a user does with sessions and connections, each as one named use case over the store: the
 * routes (http/routes/api.ts) parse, call one of these, and answer. Every change records its
 * event in the same store step (./events.ts).
 */
export function createLifecycle(deps: {
  store: Store;
  handoffs: Handoffs;
  sessions: Sessions;
  connections: ConnectionRepository;
  loadConnection: ConnectionLoader;
  now: () => number;
}) {
  const { store, handoffs, sessions, connections, loadConnection, now } = deps;
  const backoffs = createRefreshBackoff({ store, now });

  /** A license already in the session (same api_url) is replaced in place and keeps its id. */
  async function upsert(sid: string, apiUrl: string, tokens: TokenSet): Promise<ConnectionRecord> {
    for (let attempt = 0; attempt < UPSERT_ATTEMPTS; attempt++) {
      const current = await sameLicense(sid, apiUrl);
      const record: ConnectionRecord = {
        id: current?.record.id ?? randomToken(16),
        apiUrl,
        status: 'connected',
        connectedAt: now(),
        tokens,
      };
      // Created, or reconnected (authorized again: it keeps its id).
      const event = connectionEvent(
        current ? 'connection.reconnected' : 'connection.created',
        record,
      );
      if (await connections.save(sid, record, current?.version ?? 0, event)) {
        // Authorized again: whatever held its refreshes back is over.
        await backoffs.clear(sid, record.id);
        return record;
      }
    }
    throw new BrokerError('server_error', 'could not store the connection', { expose: false });
  }

  async function sameLicense(sid: string, apiUrl: string): Promise<LoadedConnection | null> {
    let found: LoadedConnection | null = null;
    for (const id of await connections.ids(sid)) {
      const loaded = await connections.load(sid, id);
      if (loaded?.record.apiUrl === apiUrl) found = loaded;
    }
    return found;
  }

  /** Removes one connection, reporting it when this call is the one that removed it. */
  const removeOne = async (sid: string, record: Pick<ConnectionRecord, 'id' | 'apiUrl'>) =>
    connections.remove(sid, record.id, connectionEvent('connection.removed', record));

  return {
    /**
     * POST /session: redeem the handoff with its PKCE verifier and store the connection, in the
     * session `sessionToken` names when it is still valid, else in a new session. Answers the
     * session's token (the one given, or a new one) and the connection.
     */
    async connect(request: {
      handoff: string;
      verifier: string;
      sessionToken: string | undefined;
    }): Promise<{ sessionToken: string; record: ConnectionRecord; joined: boolean }> {
      const payload = await handoffs.redeem(request.handoff, request.verifier);
      const given = request.sessionToken;
      const joined = given === undefined ? null : await sessions.resolve(given);
      const { token, sid } =
        joined !== null && given !== undefined
          ? { token: given, sid: joined }
          : await sessions.create();
      const record = await upsert(sid, payload.apiUrl, payload.tokens);
      // A sign-out that ran meanwhile may have listed the connections before this one was
      // written: then it is this call's to remove (the sign-out deleted the session with what it
      // listed, so this sees it).
      if (!(await sessions.exists(sid))) {
        await removeOne(sid, record);
        throw invalidSession();
      }
      return { sessionToken: token, record, joined: joined !== null };
    },

    /**
     * DELETE /session: the session with everything under it (./end-session.ts). A connection a
     * concurrent POST /session writes after it is that call's to remove (`connect`).
     */
    async signOut(sid: string): Promise<void> {
      await endSession({ sessions, connections }, sid, 'signed_out');
    },

    /** GET /connections: each still allowed, oldest first. */
    async list(sid: string): Promise<ConnectionRecord[]> {
      const records: ConnectionRecord[] = [];
      for (const id of await connections.ids(sid)) {
        const loaded = await loadConnection(sid, id).catch((error: unknown) => {
          if (error instanceof BrokerError && error.code === 'not_found') return null;
          throw error;
        });
        if (loaded) records.push(loaded.record);
      }
      return records.sort((a, b) => a.connectedAt - b.connectedAt || a.id.localeCompare(b.id));
    },

    /** DELETE /connections/:id: not_found unless the session holds it. */
    async remove(sid: string, id: string): Promise<void> {
      if (!(await connections.ids(sid)).includes(id)) throw notFound('Connection');
      const loaded = await connections.load(sid, id);
      if (loaded) await removeOne(sid, loaded.record);
      else await connections.remove(sid, id);
    },
  };
}
export type Lifecycle = ReturnType<typeof createLifecycle>;
