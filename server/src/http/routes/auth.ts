import {
  authStartQuerySchema,
  routes,
  type AuthRedirectError,
  type RedirectCheckResponse,
} from '@baton/shared';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { Next, SignIn } from '../../oauth/sign-in.ts';
import { isStoreDown } from '../../store/errors.ts';
import { browserFlows } from '../auth-session.ts';
import { errorPage, pageLocale, type Page, type PageLocale } from '../pages.ts';

export interface AuthDeps {
  signIn: SignIn;
  log: Logger;
}

/** A query parameter given exactly once as a plain string, else undefined. */
function single(req: Request, name: string): string | undefined {
  const value: unknown = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

/** What the extension is told of a callback that carries `error`: a denial, or a failure. */
const providerError = (req: Request): AuthRedirectError | undefined =>
  req.query.error === undefined
    ? undefined
    : single(req, 'error') === 'access_denied'
      ? 'access_denied'
      : 'server_error';

/**
 * The language of this request's page: its pending flow's (the latest), or the one /auth/start
 * was asked for, else the browser's (pages.ts).
 */
function localeOf(req: Request): PageLocale {
  const flow = (req.session as Partial<typeof req.session> | undefined)?.flows?.at(-1);
  return pageLocale(req, flow?.locale ?? single(req, 'locale'));
}

function page(req: Request, res: Response, status: number, shown: Page): void {
  res
    .status(status)
    .type('html')
    .send(errorPage(shown, localeOf(req)));
}

/** Where a sign-in use case sends the browser: on, or a page saying why not. */
function answer(req: Request, res: Response, next: Next): void {
  if ('redirect' in next) res.redirect(302, next.redirect);
  else page(req, res, 400, { kind: next.refused });
}

/** The authorization window's routes: each parses, calls one use case of oauth/sign-in.ts, answers. */
export function authRouter(deps: AuthDeps): Router {
  const { signIn, log } = deps;
  const router = Router({ strict: true, caseSensitive: true });

  router.use((_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    res.set('Referrer-Policy', 'no-referrer');
    next();
  });

  router.get(routes.redirectCheck, (req, res) => {
    const check: RedirectCheckResponse = {
      allowed: signIn.allowsRedirect(single(req, 'redirect_uri')),
    };
    res.json(check);
  });

  router.get(routes.authStart, async (req, res) => {
    const parsed = authStartQuerySchema.safeParse({
      locale: req.query.locale,
      redirect_uri: req.query.redirect_uri,
      code_challenge: req.query.code_challenge,
      code_challenge_method: req.query.code_challenge_method,
    });
    if (!parsed.success) {
      const parameter = String(parsed.error.issues[0]?.path[0] ?? 'query');
      return page(req, res, 400, { kind: 'bad_parameter', parameter });
    }
    const { locale, redirect_uri, code_challenge } = parsed.data;
    const request = { locale, redirectUri: redirect_uri, challenge: code_challenge };
    answer(req, res, await signIn.start(request, browserFlows(req)));
  });

  router.get(routes.authCallback, async (req, res) => {
    const callback = {
      state: single(req, 'state'),
      error: providerError(req),
      apiUrl: single(req, 'api_url'),
      code: single(req, 'code'),
    };
    answer(req, res, await signIn.complete(callback, browserFlows(req)));
  });

  // Errors in the authorization window are pages, not JSON.
  router.use(
    [routes.authStart, routes.authCallback],
    (error: unknown, req: Request, res: Response, next: NextFunction) => {
      if (res.headersSent) return next(error);
      if (isStoreDown(error)) {
        res.set('Retry-After', '5');
        return page(req, res, 503, { kind: 'unavailable' });
      }
      log.error({ err: error }, 'authorization route failed');
      page(req, res, 500, { kind: 'server_error' });
    },
  );

  return router;
}
