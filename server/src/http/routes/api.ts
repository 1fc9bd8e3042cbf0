import {
  routes,
  routeTemplates,
  sessionCreateRequestSchema,
  type ConnectionsResponse,
  type SessionCreateResponse,
} from '@baton/shared';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { invalidRequest } from '../../base/errors.ts';
import type { Lifecycle } from '../../connections/lifecycle.ts';
import { toConnection } from '../../connections/records.ts';
import { bearer, type RequireSid } from '../session-auth.ts';

export interface ApiDeps {
  lifecycle: Lifecycle;
  requireSid: RequireSid;
  log: Logger;
}

/**
 * The session and connection routes: each parses its request, calls one use case of
 * connections/lifecycle.ts, and answers.
 */
export function apiRouter(deps: ApiDeps): Router {
  const { lifecycle, requireSid, log } = deps;
  const router = Router({ strict: true, caseSensitive: true });

  router.use([routes.session, routes.connections], (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });

  /** The caller's session id (in res.locals), or 401 invalid_session. */
  async function requireSession(req: Request, res: Response, next: NextFunction): Promise<void> {
    res.locals.sid = await requireSid(req);
    next();
  }
  const sidOf = (res: Response): string => res.locals.sid as string;

  router.post(routes.session, express.json({ limit: '4kb' }), async (req, res) => {
    const body = sessionCreateRequestSchema.safeParse(req.body);
    if (!body.success) throw invalidRequest('Expected { handoff, code_verifier }.');
    const { sessionToken, record, joined } = await lifecycle.connect({
      handoff: body.data.handoff,
      verifier: body.data.code_verifier,
      sessionToken: bearer(req.headers),
    });
    log.info({ connection: record.id, joined }, 'connection created');
    const response: SessionCreateResponse = {
      session_token: sessionToken,
      connection: toConnection(record),
    };
    res.status(201).json(response);
  });

  router.delete(routes.session, requireSession, async (_req, res) => {
    await lifecycle.signOut(sidOf(res));
    res.status(204).end();
  });

  router.get(routes.connections, requireSession, async (_req, res) => {
    const records = await lifecycle.list(sidOf(res));
    const response: ConnectionsResponse = { connections: records.map(toConnection) };
    res.json(response);
  });

  router.delete(routeTemplates.connection, requireSession, async (req, res) => {
    await lifecycle.remove(sidOf(res), String(req.params.id));
    res.status(204).end();
  });

  return router;
}
