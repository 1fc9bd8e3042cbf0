import {
  sessionCreateRequestSchema,
  type ConnectionsResponse,
  type SessionCreateResponse,
} from '@baton/shared';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import {
  toConnection,
  type ConnectionRecord,
  type ConnectionRepository,
  type LoadedConnection,
} from '../../connections/records.ts';
import { randomToken } from '../../crypto.ts';
import { BrokerError, invalidRequest, invalidSession, notFound } from '../../errors.ts';
import { keys } from '../../store/keys.ts';
import type { Sessions } from '../../connections/sessions.ts';
import type { Store } from '../../store/types.ts';
import type { ConnectionLoader } from '../../connections/loader.ts';
import { bearer, type RequireSid } from '../session-auth.ts';
import type { HandoffPayload, Handoffs } from '../../oauth/handoff.ts';

export interface ApiDeps {
  store: Store;
  handoffs: Handoffs;
  sessions: Sessions;
  connections: ConnectionRepository;
  loadConnection: ConnectionLoader;
  requireSid: RequireSid;
  now: () => number;
  log: Logger;
}

export function apiRouter(deps: ApiDeps): Router {
  const { store, handoffs, sessions, connections, loadConnection, requireSid, now, log } = deps;
  const router = Router();

  router.use(['/session', '/connections'], (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });

  /** The caller's session id (in res.locals), or 401 invalid_session. */
  async function requireSession(req: Request, res: Response, next: NextFunction): Promise<void> {
    res.locals.sid = await requireSid(req);
    next();
  }
  const sidOf = (res: Response): string => res.locals.sid as string;

  router.post('/session', express.json({ limit: '4kb' }), async (req, res) => {
    const body = sessionCreateRequestSchema.safeParse(req.body);
    if (!body.success) throw invalidRequest('Expected { handoff, code_verifier }.');
    const { handoff, code_verifier: verifier } = body.data;

    const payload = await handoffs.redeem(handoff, verifier);

    const existing = bearer(req.headers);
    const joined = existing === undefined ? null : await sessions.resolve(existing);
    const { token, sid } =
      joined !== null && existing !== undefined
        ? { token: existing, sid: joined }
        : await sessions.create();

    const record = await upsertConnection(sid, payload);
    // A sign-out that ran meanwhile may have listed the connections before this one was written:
    // then it is this call's to remove (the sign-out deletes the session first, so this sees it).
    if (!(await sessions.exists(sid))) {
      await connections.remove(sid, record.id, {
        type: 'connection.removed',
        connection: { id: record.id, api_origin: new URL(record.apiUrl).origin },
      });
      throw invalidSession();
    }
    log.info({ connection: record.id, joined: joined !== null }, 'connection created');
    const response: SessionCreateResponse = {
      session_token: token,
      connection: toConnection(record),
    };
    res.status(201).json(response);
  });

  /** A license already in the session (same api_url) is replaced in place and keeps its id. */
  async function upsertConnection(sid: string, payload: HandoffPayload): Promise<ConnectionRecord> {
    for (let attempt = 0; attempt < 5; attempt++) {
      let current: LoadedConnection | null = null;
      for (const id of await connections.ids(sid)) {
        const loaded = await connections.load(sid, id);
        if (loaded?.record.apiUrl === payload.apiUrl) current = loaded;
      }
      const record: ConnectionRecord = {
        id: current?.record.id ?? randomToken(16),
        apiUrl: payload.apiUrl,
        status: 'connected',
        connectedAt: now(),
        tokens: payload.tokens,
      };
      // Recorded with the write: created, or reconnected (authorized again; it keeps its id).
      const event = {
        type: current ? 'connection.reconnected' : 'connection.created',
        connection: { id: record.id, api_origin: new URL(record.apiUrl).origin },
      } as const;
      if (await connections.save(sid, record, current?.version ?? 0, event)) {
        await store.del(keys.backoff(sid, record.id));
        return record;
      }
    }
    throw new BrokerError('server_error', 'could not store the connection', { expose: false });
  }

  router.delete('/session', requireSession, async (_req, res) => {
    const sid = sidOf(res);
    const ids = await connections.ids(sid);
    // The session first: from then on nothing new is written under it (see POST /session).
    await sessions.destroy(sid, { type: 'session.ended', reason: 'signed_out', connections: ids });
    for (const id of await connections.ids(sid)) await connections.remove(sid, id);
    await store.del(keys.connectionIds(sid));
    res.status(204).end();
  });

  router.get('/connections', requireSession, async (_req, res) => {
    const sid = sidOf(res);
    const records: ConnectionRecord[] = [];
    for (const id of await connections.ids(sid)) {
      const loaded = await loadConnection(sid, id).catch((error: unknown) => {
        if (error instanceof BrokerError && error.code === 'not_found') return null;
        throw error;
      });
      if (loaded) records.push(loaded.record);
    }
    records.sort((a, b) => a.connectedAt - b.connectedAt || a.id.localeCompare(b.id));
    const response: ConnectionsResponse = { connections: records.map(toConnection) };
    res.json(response);
  });

  router.delete('/connections/:id', requireSession, async (req, res) => {
    const sid = sidOf(res);
    const id = String(req.params.id);
    if (!(await connections.ids(sid)).includes(id)) throw notFound('Connection');
    const loaded = await connections.load(sid, id);
    await connections.remove(
      sid,
      id,
      loaded
        ? {
            type: 'connection.removed',
            connection: { id, api_origin: new URL(loaded.record.apiUrl).origin },
          }
        : undefined,
    );
    res.status(204).end();
  });

  return router;
}
