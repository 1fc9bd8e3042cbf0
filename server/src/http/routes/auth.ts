import {
  authStartQuerySchema,
  routes,
  type AuthRedirectError,
  type RedirectCheckResponse,
} from '@baton/shared';
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { checkApiUrl } from '../../oauth/allowlist.ts';
import type { Config } from '../../config/config.ts';
import { hashToken, randomToken, safeEqual } from '../../base/crypto.ts';
import {
  FLOW_TTL_MS,
  livePending,
  MAX_PENDING_FLOWS,
  type PendingFlow,
} from '../../oauth/flows.ts';
import type { Handoffs } from '../../oauth/handoff.ts';
import { keys } from '../../store/keys.ts';
import { errorPage, pageLocale, type Page, type PageLocale } from '../pages.ts';
import type { Provider } from '../../oauth/provider.ts';
import { isStoreDown } from '../../store/errors.ts';
import type { Store } from '../../store/types.ts';

declare module 'express-session' {
  interface SessionData {
    flows?: PendingFlow[];
  }
}

export interface AuthDeps {
  config: Config;
  store: Store;
  handoffs: Handoffs;
  provider: Provider;
  now: () => number;
  log: Logger;
}

/** A query parameter given exactly once as a plain string, else undefined. */
function single(req: Request, name: string): string | undefined {
  const value: unknown = req.query[name];
  return typeof value === 'string' ? value : undefined;
}

/** What the extension is told of a callback that carries `error`: a denial, or a failure. */
const providerError = (req: Request): AuthRedirectError =>
  single(req, 'error') === 'access_denied' ? 'access_denied' : 'server_error';

/**
 * The language of this request's page: its pending flow's (the latest), or the one /auth/start
 * was asked for, else the browser's (pages.ts).
 */
function localeOf(req: Request): PageLocale {
  const flow = (req.session as Partial<typeof req.session> | undefined)?.flows?.at(-1);
  return pageLocale(req, flow?.locale ?? single(req, 'locale'));
}

function badRequest(req: Request, res: Response, page: Page): void {
  res
    .status(400)
    .type('html')
    .send(errorPage(page, localeOf(req)));
}

export function authRouter(deps: AuthDeps): Router {
  const { config, store, handoffs, provider, now, log } = deps;
  const router = Router({ strict: true, caseSensitive: true });

  router.use((_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    res.set('Referrer-Policy', 'no-referrer');
    next();
  });

  const pendingOf = (req: Request): PendingFlow[] => livePending(req.session.flows, now());

  const saveSession = (req: Request): Promise<void> =>
    new Promise((resolve, reject) =>
      req.session.save((error) => (error ? reject(error) : resolve())),
    );

  router.get(routes.redirectCheck, (req, res) => {
    const uri = single(req, 'redirect_uri');
    const answer: RedirectCheckResponse = {
      allowed: uri !== undefined && config.extensionRedirectUrls.includes(uri),
    };
    res.json(answer);
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
      return badRequest(req, res, { kind: 'bad_parameter', parameter });
    }
    const query = parsed.data;
    if (!config.extensionRedirectUrls.includes(query.redirect_uri)) {
      return badRequest(req, res, { kind: 'redirect_not_allowed' });
    }
    const flow: PendingFlow = {
      state: randomToken(32),
      redirectUri: query.redirect_uri,
      challenge: query.code_challenge,
      locale: query.locale,
      createdAt: now(),
    };
    req.session.flows = [...pendingOf(req), flow].slice(-MAX_PENDING_FLOWS);
    await saveSession(req);

    const authorize = new URL(`${config.provider.authUrl}/${query.locale}/api/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      client_id: config.provider.clientId,
      response_type: 'code',
      redirect_uri: config.provider.redirectUri,
      state: flow.state,
    }).toString();
    res.redirect(302, authorize.href);
  });

  /**
   * Take a pending flow out of the session for good (read, delete, then check): the session is
   * saved without it, and a claim in the store makes sure that of two concurrent callbacks with the
   * same state only one goes on.
   */
  async function consume(req: Request, flow: PendingFlow): Promise<boolean> {
    req.session.flows = (req.session.flows ?? []).filter((other) => other.state !== flow.state);
    await saveSession(req);
    return store.setIfAbsent(keys.stateClaim(hashToken(flow.state)), '1', FLOW_TTL_MS);
  }

  const backToExtension = (
    res: Response,
    flow: PendingFlow,
    result: { handoff: string } | { error: AuthRedirectError },
  ): void => {
    const target = new URL(flow.redirectUri);
    for (const [name, value] of Object.entries(result)) target.searchParams.set(name, value);
    res.redirect(302, target.href);
  };

  router.get(routes.authCallback, async (req, res) => {
    const pending = pendingOf(req);
    const latest = pending.at(-1);
    const state = single(req, 'state');
    const flow = state === undefined ? undefined : pending.find((f) => safeEqual(f.state, state));

    // Any page the user visits can send this browser here (the SameSite=Lax cookie goes along),
    // so only a callback that carries a flow's own state may end that flow. The provider's denial
    // carries no state: it answers the most recent flow's extension URL and leaves every flow to
    // expire, as does a callback with an unknown state.
    if (!flow) {
      if (!latest) return badRequest(req, res, { kind: 'no_flow' });
      if (req.query.error !== undefined) {
        return backToExtension(res, latest, { error: providerError(req) });
      }
      log.warn('authorization callback with a missing or unknown state');
      return backToExtension(res, latest, { error: 'invalid_state' });
    }
    if (req.query.error !== undefined) {
      await consume(req, flow);
      return backToExtension(res, flow, { error: providerError(req) });
    }
    if (!(await consume(req, flow))) {
      log.warn('authorization callback replayed');
      return backToExtension(res, flow, { error: 'invalid_state' });
    }

    const rawApiUrl = single(req, 'api_url');
    const apiUrl =
      rawApiUrl === undefined ? undefined : checkApiUrl(rawApiUrl, config.provider.apiUrlAllowlist);
    if (apiUrl === undefined) {
      log.warn('authorization callback with an api_url outside the allowlist');
      return backToExtension(res, flow, { error: 'invalid_api_url' });
    }
    const code = single(req, 'code');
    if (code === undefined || code.length === 0 || code.length > 2048) {
      return backToExtension(res, flow, { error: 'exchange_failed' });
    }

    let tokens;
    try {
      tokens = await provider.exchangeCode(apiUrl, code);
    } catch (error) {
      log.warn({ err: error, apiOrigin: new URL(apiUrl).origin }, 'code exchange failed');
      return backToExtension(res, flow, { error: 'exchange_failed' });
    }

    const handoff = await handoffs.issue({ apiUrl, challenge: flow.challenge, tokens });
    backToExtension(res, flow, { handoff });
  });

  // Errors in the authorization window are pages, not JSON.
  router.use(
    [routes.authStart, routes.authCallback],
    (error: unknown, req: Request, res: Response, next: NextFunction) => {
      if (res.headersSent) return next(error);
      if (isStoreDown(error)) {
        res.set('Retry-After', '5');
        res
          .status(503)
          .type('html')
          .send(errorPage({ kind: 'unavailable' }, localeOf(req)));
        return;
      }
      log.error({ err: error }, 'authorization route failed');
      res
        .status(500)
        .type('html')
        .send(errorPage({ kind: 'server_error' }, localeOf(req)));
    },
  );

  return router;
}
