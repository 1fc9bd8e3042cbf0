import { routes, routeTemplates, type HealthResponse, type ReadinessResponse } from '@baton/shared';
import express, { type NextFunction, type Request, type Response } from 'express';
import { rateLimit, type Store as RateLimitStore } from 'express-rate-limit';
import session, { type Store as SessionStore } from 'express-session';
import type { RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.ts';
import type { Lifecycle } from '../connections/lifecycle.ts';
import type { ConnectionLoader } from '../connections/loader.ts';
import type { ConnectionRepository } from '../connections/records.ts';
import type { TokenService } from '../connections/refresh/service.ts';
import type { Sessions } from '../connections/sessions.ts';
import type { SignIn } from '../oauth/sign-in.ts';
import type { Store } from '../store/types.ts';
import { BrokerError } from '../base/errors.ts';
import { storeWideReporter, type Metrics } from '../ops/metrics.ts';
import { tracedListener, tracingOn } from '../base/tracing.ts';
import { accessLog, createTracker } from './access-log.ts';
import { createReadiness, errorAnswer } from './answers.ts';
import { clientAddress, type TrustProxy } from './limits.ts';
import { metricsHandler } from './metrics-route.ts';
import { apiRouter } from './routes/api.ts';
import { FLOW_TTL_MS } from '../oauth/flows.ts';
import { authRouter } from './routes/auth.ts';
import { proxyRoute } from './routes/proxy-route.ts';
import { apiHeaders, pageHeaders, type SetHeaders } from './security-headers.ts';
import { createSessionGate, IPV6_CLIENT_PREFIX } from './session-auth.ts';

/** The broker's services the routes call (compose.ts builds them). */
export interface AppServices {
  now: () => number;
  signIn: SignIn;
  sessions: Sessions;
  connections: ConnectionRepository;
  tokens: TokenService;
  loadConnection: ConnectionLoader;
  lifecycle: Lifecycle;
}

export interface AppDeps {
  config: Config;
  store: Store;
  dispatcher: Dispatcher;
  log: Logger;
  services: AppServices;
  /** Where express-session keeps the authorization window's session (connect-redis, or memory). */
  sessionStore: SessionStore;
  /** A store per rate limiter (rate-limit-redis, or undefined for express-rate-limit's memory). */
  rateLimitStore?: (prefix: string) => RateLimitStore;
  /** Prometheus metrics; GET /metrics on this app when config.metrics.token is set, and no port. */
  metrics?: Metrics;
}

export interface BrokerApp {
  /**
   * The broker's request listener: API calls (`/connections/:id/api/…`) go to the proxy route,
   * everything else to the Express app.
   */
  app: RequestListener;
  tokens: TokenService;
  /** At shutdown, before the store closes: let go of what this instance holds in the store. */
  release(): Promise<void>;
  /** Readiness: false while shutting down. */
  setReady(ready: boolean): void;
}

const unknownRoute = (): BrokerError => new BrokerError('not_found', 'No such route.');

/**
 * The broker's HTTP side over its services (composed by the caller: compose.ts). Never listens:
 * main.ts (or a test) does.
 * Both stacks take the same steps: the access log and metrics, the security headers, the one
 * error answer (answers.ts).
 */
export function createApp(deps: AppDeps): BrokerApp {
  const { config, store, log, metrics, services } = deps;
  const { now, sessions, connections, tokens, loadConnection } = services;
  const readiness = createReadiness(store, log);
  const fail = errorAnswer(log, readiness);
  const https = config.publicUrl.protocol === 'https:';
  /** Every answer: security headers, and while shutting down, a hint to move elsewhere. */
  const prepare =
    (headers: SetHeaders) =>
    (res: ServerResponse): void => {
      headers(res);
      if (!readiness.accepting) res.setHeader('Connection', 'close');
    };

  const reporter = storeWideReporter(store);
  metrics?.observe({
    tokens: () => tokens.counters,
    connections: () => connections.countByStatus(),
    reportsStoreWide: reporter.reports,
  });
  const track = createTracker(log, metrics?.answered);

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.listen.trustProxy);
  app.set('etag', false);
  // Only the paths and methods docs/openapi.json lists: `/healthz/` and `/HEALTHZ` are unknown
  // routes, as are HEAD (which Express answers from a GET route) and OPTIONS (which its router
  // answers for any route): no CORS, the extension calls from its background with host permission.
  app.set('strict routing', true);
  app.set('case sensitive routing', true);
  app.use(accessLog(track));
  const preparePage = prepare(pageHeaders(https));
  app.use((req, res, next) => {
    preparePage(res);
    if (req.method === 'HEAD' || req.method === 'OPTIONS') next(unknownRoute());
    else next();
  });

  app.get(routes.healthz, (_req, res) => {
    const answer: HealthResponse = { status: 'ok' };
    res.json(answer);
  });
  app.get(routes.readyz, async (_req, res) => {
    const answer: ReadinessResponse = { status: await readiness.status() };
    res.status(answer.status === 'ready' ? 200 : 503).json(answer);
  });
  // With a port of its own (main.ts serves it there), /metrics is not on this one, token or not.
  if (metrics && config.metrics.token !== undefined && config.metrics.port === undefined)
    app.get(routes.metrics, metricsHandler(metrics, config.metrics.token));

  // The limiters' own complaints (a store that failed) as the broker's lines, not on stderr.
  const limiterLog = {
    error: (err: unknown, msg?: string) => deps.log.warn({ err }, msg),
    warn: (err: unknown, msg?: string) => deps.log.warn({ err }, msg),
  };
  const limiter = (name: string, limit: number) =>
    rateLimit({
      logger: limiterLog,
      windowMs: 60_000,
      limit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      // An IPv6 client by its /56, as the session check counts it (its default, said once).
      ipv6Subnet: IPV6_CLIENT_PREFIX,
      ...(deps.rateLimitStore ? { store: deps.rateLimitStore(`${name}:`) } : {}),
      // Fail open when the store is down: the routes behind it fail closed on their own.
      passOnStoreError: true,
      handler: (_req, _res, next) => {
        next(new BrokerError('rate_limited', 'Too many requests; slow down.', { retryAfter: 60 }));
      },
    });

  app.use(
    routeTemplates.auth,
    limiter('auth', config.sessions.signInLimit),
    session({
      store: deps.sessionStore,
      name: https ? '__Host-baton.auth' : 'baton.auth',
      secret: config.sessionSecrets,
      resave: false,
      saveUninitialized: false,
      rolling: false,
      proxy: config.listen.trustProxy !== false,
      cookie: { httpOnly: true, sameSite: 'lax', secure: https, path: '/', maxAge: FLOW_TTL_MS },
    }),
  );
  app.use(authRouter({ signIn: services.signIn, log }));
  app.post(routes.session, limiter('session', 30));
  const requireSid = createSessionGate({
    sessions,
    now,
    addressOf: clientAddress(app.get('trust proxy fn') as TrustProxy),
    failuresPerMinute: config.sessions.failureLimit,
    callsPerMinute: config.sessions.rateLimit,
  });
  app.use(apiRouter({ lifecycle: services.lifecycle, requireSid, log }));
  app.use((_req, _res, next) => {
    next(unknownRoute());
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => fail(res, error));

  const proxy = proxyRoute({
    requireSid,
    loadConnection,
    tokens,
    dispatcher: deps.dispatcher,
    log,
    timeoutMs: config.proxy.timeoutMs,
    maxAnswerBytes: config.proxy.maxAnswerBytes,
    tokenWaitMs: config.proxy.tokenWaitMs,
    track,
    prepare: prepare(apiHeaders(https)),
    fail,
  });
  const listener: RequestListener = (req, res) => {
    const call = proxy.match(req.url ?? '');
    if (call === null) app(req, res);
    else void proxy.handle(req, res, call);
  };
  return {
    app: tracingOn() ? tracedListener(listener) : listener,
    tokens,
    setReady: readiness.setReady,
    release: () => reporter.release(),
  };
}
