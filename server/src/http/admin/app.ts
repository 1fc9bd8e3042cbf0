import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import type { Logger } from 'pino';
import type { AdminUseCases } from '../../admin/types.ts';
import type { AdminTokenEntry } from '../../config/admin-tokens.ts';
import { apiHeaders } from '../security-headers.ts';
import { actorOf, adminGate } from './auth.ts';
import { adminErrorAnswer, noSuchRoute } from './errors.ts';
import { ADMIN_API_BASE, adminRoutes } from './routes.ts';
import { createAuthenticator, type Authenticate } from './tokens.ts';

export interface AdminAppDeps {
  useCases: AdminUseCases;
  /** The entries of a tokens file, or an authenticator (tokensFromFile: main.ts's). */
  tokens: readonly AdminTokenEntry[] | Authenticate;
  log: Logger;
  now: () => number;
  /** The console's page and assets (GET /, /console.js, /console.css), served without a token. */
  console?: RequestHandler;
  /** Failed authentications one address may make a minute (default 10). */
  failuresPerMinute?: number;
}

/**
 * The admin listener's app (ADMIN_PORT): the console, then /api/v1 behind the token gate. Never
 * listens: main.ts (or a test) does. Like the public app it answers only what it lists, in exact
 * case and without a trailing slash (HEAD and OPTIONS are unknown routes), never caches, and
 * answers every error as JSON `{ error, message }`.
 */
export function createAdminApp(deps: AdminAppDeps): express.Express {
  const { log } = deps;
  const authenticate =
    typeof deps.tokens === 'function' ? deps.tokens : createAuthenticator(deps.tokens);
  const fail = adminErrorAnswer(log);
  const headers = apiHeaders(false);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // The socket's address: a proxy header would let a client choose where its failures count.
  app.set('trust proxy', false);
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  // The query parser Express 5 uses by default, said here: a repeated parameter is an array.
  app.set('query parser', 'simple');
  app.use(callLog(log));
  app.use((req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    if (req.method === 'HEAD' || req.method === 'OPTIONS') next(noSuchRoute());
    else next();
  });
  // The console sets its own strict CSP on its page and assets; the API's answers get these.
  if (deps.console) app.use(deps.console);
  app.use(ADMIN_API_BASE, (_req, res, next) => {
    headers(res);
    next();
  });
  app.use(
    ADMIN_API_BASE,
    adminGate({
      authenticate,
      now: deps.now,
      ...(deps.failuresPerMinute === undefined
        ? {}
        : { failuresPerMinute: deps.failuresPerMinute }),
    }),
  );
  app.use(ADMIN_API_BASE, adminRoutes(deps.useCases));
  app.use((_req, res, next) => {
    headers(res);
    next(noSuchRoute());
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => fail(res, error));
  return app;
}

/**
 * One line per call: who (the token's name and role, or none), the method, the route template,
 * the status, the time taken and the target the route validated (an id, a session reference, a
 * licence). Never a header, a query or a body: what an unauthenticated caller sends could be
 * anything, a token pasted in the wrong place included.
 */
function callLog(log: Logger): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.on('close', () => {
      const actor = actorOf(res);
      // Named by the API's route itself (routes.ts): Express has restored req.baseUrl by now. The
      // console's routes are mounted at the root, where req.route's path is the whole path.
      const route =
        typeof res.locals.route === 'string'
          ? res.locals.route
          : req.route
            ? String((req.route as { path: unknown }).path)
            : 'unmatched';
      const line = {
        actor: actor?.name ?? null,
        role: actor?.role ?? null,
        method: req.method,
        route,
        status: res.statusCode,
        ms: Math.round((performance.now() - started) * 10) / 10,
        ...(typeof res.locals.target === 'string' ? { target: res.locals.target } : {}),
      };
      if (!res.writableFinished) log.warn(line, 'admin call aborted');
      else if (res.statusCode >= 500) log.error(line, 'admin call');
      else if (res.statusCode >= 400) log.warn(line, 'admin call');
      else log.info(line, 'admin call');
    });
    next();
  };
}
