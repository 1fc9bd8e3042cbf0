import { BROKER_ERROR_HEADER } from '@baton/shared';
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { rateLimit, type Store as RateLimitStore } from 'express-rate-limit';
import session, { type Store as SessionStore } from 'express-session';
import helmet from 'helmet';
import type { RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { accessLog, createTracker, requestId } from './access-log.ts';
import type { Config } from '../config.ts';
import { createConnectionRepository } from '../connections/records.ts';
import { createSealer, MissingKeyError } from '../crypto.ts';
import { BrokerError } from '../errors.ts';
import { noEvents, type EventSink } from '../ops/events.ts';
import type { Metrics } from '../ops/metrics.ts';
import { metricsHandler } from './metrics-route.ts';
import { createProvider } from '../oauth/provider.ts';
import { clientAddress, type TrustProxy } from './limits.ts';
import { createConnectionLoader } from '../connections/loader.ts';
import { createSessionGate } from './session-auth.ts';
import { apiRouter } from './routes/api.ts';
import { authRouter, FLOW_TTL_MS } from './routes/auth.ts';
import { proxyRoute } from './routes/proxy-route.ts';
import { createSessions } from '../connections/sessions.ts';
import { isStoreDown } from '../store/errors.ts';
import type { Store } from '../store/types.ts';
import { createTokenService, type TokenService } from '../connections/refresh/service.ts';

export interface AppDeps {
  config: Config;
  store: Store;
  /** Where express-session keeps the authorization window's session (connect-redis, or memory). */
  sessionStore: SessionStore;
  /** A store per rate limiter (rate-limit-redis, or undefined for express-rate-limit's memory). */
  rateLimitStore?: (prefix: string) => RateLimitStore;
  dispatcher: Dispatcher;
  log: Logger;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Bound on one token request, in ms, instead of config.tokenTimeoutMs (lease: 5 s longer). */
  tokenTimeoutMs?: number;
  /** Where connection events go (EVENTS_WEBHOOK_URL); default nowhere. */
  events?: EventSink;
  /** Prometheus metrics; GET /metrics on this app when config.metricsToken is set. */
  metrics?: Metrics;
}

export interface BrokerApp {
  /**
   * The broker's request listener: API calls (`/connections/:id/api/…`) go to the proxy route,
   * everything else to the Express app.
   */
  app: RequestListener;
  tokens: TokenService;
  /** Readiness: false while shutting down. */
  setReady(ready: boolean): void;
}

/** The broker. Never listens: main.ts (or a test) does. */
export function createApp(deps: AppDeps): BrokerApp {
  const { config, store, log } = deps;
  const now = deps.now ?? Date.now;
  const sleep =
    deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const tokenTimeoutMs = deps.tokenTimeoutMs ?? config.tokenTimeoutMs;
  const refreshLeaseMs =
    deps.tokenTimeoutMs === undefined ? config.refreshLeaseMs : deps.tokenTimeoutMs + 5000;
  const sealer = createSealer(config.keyring);
  const provider = createProvider({
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    redirectUri: config.redirectUri,
    dispatcher: deps.dispatcher,
    now,
    timeoutMs: tokenTimeoutMs,
  });
  const sessions = createSessions(store, now, config.sessionLifetime);
  const connections = createConnectionRepository(store, sealer, {
    openedEntries: config.redisCacheEntries,
    sessions,
  });
  const events = deps.events ?? noEvents;
  const tokens = createTokenService({
    store,
    events,
    connections,
    provider,
    now,
    sleep,
    log,
    refreshAheadMs: config.refreshAheadMs,
    refreshMinIntervalMs: config.refreshMinIntervalMs,
    tokenTimeoutMs,
    leaseMs: refreshLeaseMs,
  });
  let ready = true;
  /** A stored record needs a key TOKEN_ENCRYPTION_KEYS lacks: not ready until restarted with it. */
  let missingKey = false;

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('etag', false);

  const { metrics } = deps;
  if (metrics) {
    metrics.observe({
      tokens: () => tokens.counters,
      connections: () => connections.countByStatus(),
    });
  }

  const track = createTracker(log, metrics?.answered);
  app.use(accessLog(track));

  const https = config.publicUrl.protocol === 'https:';
  const securityHeaders = fixedHeaders(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          styleSrc: ["'unsafe-inline'"],
          frameAncestors: ["'none'"],
          formAction: ["'none'"],
          baseUri: ["'none'"],
        },
      },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      referrerPolicy: { policy: 'no-referrer' },
      xFrameOptions: { action: 'deny' },
    }),
  );
  /**
   * A proxied answer is JSON for the extension, never a page: it needs what OWASP's REST cheat
   * sheet lists (no sniffing, no framing, no content, HSTS), not helmet's headers for documents.
   * Fewer header bytes on every API call, measurably.
   */
  const apiSecurityHeaders = fixedHeaders(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
      },
      strictTransportSecurity: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      xFrameOptions: { action: 'deny' },
      crossOriginOpenerPolicy: false,
      crossOriginResourcePolicy: false,
      originAgentCluster: false,
      referrerPolicy: false,
      xDnsPrefetchControl: false,
      xDownloadOptions: false,
      xPermittedCrossDomainPolicies: false,
      xXssProtection: false,
    }),
  );
  /** Every answer: security headers, and while shutting down, a hint to move elsewhere. */
  const prepare =
    (headers: (res: ServerResponse) => void) =>
    (res: ServerResponse): void => {
      headers(res);
      if (!ready) res.setHeader('Connection', 'close');
    };
  const prepareApp = prepare(securityHeaders);
  app.use((_req, res, next) => {
    prepareApp(res);
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    if (!ready) {
      res.status(503).json({ status: 'shutting_down' });
      return;
    }
    if (missingKey) {
      res.status(503).json({ status: 'encryption_key_missing' });
      return;
    }
    try {
      await store.ping();
      res.json({ status: 'ready' });
    } catch {
      res.status(503).json({ status: 'store_unavailable' });
    }
  });

  if (metrics && config.metricsToken !== undefined)
    app.get('/metrics', metricsHandler(metrics, config.metricsToken));

  const limiter = (name: string, limit: number) =>
    rateLimit({
      windowMs: 60_000,
      limit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      ...(deps.rateLimitStore ? { store: deps.rateLimitStore(`${name}:`) } : {}),
      // Fail open when the store is down: the routes behind it fail closed on their own.
      passOnStoreError: true,
      handler: (_req, _res, next) => {
        next(new BrokerError('rate_limited', 'Too many requests; slow down.', { retryAfter: 60 }));
      },
    });

  app.use(
    '/auth',
    limiter('auth', 60),
    session({
      store: deps.sessionStore,
      name: https ? '__Host-baton.auth' : 'baton.auth',
      secret: config.sessionSecrets,
      resave: false,
      saveUninitialized: false,
      rolling: false,
      proxy: config.trustProxy !== false,
      cookie: {
        httpOnly: true,
        sameSite: 'lax',
        secure: https,
        path: '/',
        maxAge: FLOW_TTL_MS,
      },
    }),
  );
  app.use(authRouter({ config, store, sealer, provider, now, log }));
  app.post('/session', limiter('session', 30));
  const loadConnection = createConnectionLoader({ config, connections, log });
  const requireSid = createSessionGate({
    sessions,
    now,
    addressOf: clientAddress(app.get('trust proxy fn') as TrustProxy),
    failuresPerMinute: config.sessionFailureLimit,
    callsPerMinute: config.sessionRateLimit,
  });
  app.use(
    apiRouter({
      store,
      sealer,
      sessions,
      connections,
      loadConnection,
      requireSid,
      now,
      log,
      events,
    }),
  );

  app.use((_req, _res, next) => {
    next(new BrokerError('not_found', 'No such route.'));
  });

  /** The one error answer, of both routes: every JSON error body is { error, message }. */
  const fail = (res: ServerResponse, error: unknown): void => {
    if (res.headersSent) {
      // Too late for an error body: cut the answer short rather than pass it off as whole.
      res.destroy();
      return;
    }
    if (error instanceof MissingKeyError && !missingKey) {
      missingKey = true;
      log.error(
        { err: error },
        'a stored record needs an encryption key this broker lacks; not ready until TOKEN_ENCRYPTION_KEYS has it again',
      );
    }
    const brokerError = toBrokerError(error);
    if (brokerError.code === 'server_error' || brokerError.status >= 500)
      log.error({ err: error, reqId: requestId(res) }, 'request failed');
    if (brokerError.retryAfter !== undefined)
      res.setHeader('Retry-After', String(brokerError.retryAfter));
    const body = brokerError.toBody();
    res.setHeader('Cache-Control', 'no-store');
    res.statusCode = brokerError.status;
    res.setHeader(BROKER_ERROR_HEADER, body.error);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  };
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => fail(res, error));

  const proxy = proxyRoute({
    requireSid,
    loadConnection,
    tokens,
    dispatcher: deps.dispatcher,
    log,
    track,
    prepare: prepare(apiSecurityHeaders),
    fail,
  });
  return {
    app: (req, res) => {
      const id = proxy.match(req.url ?? '');
      if (id === undefined) app(req, res);
      else void proxy.handle(req, res, id);
    },
    tokens,
    setReady(value) {
      ready = value;
    },
  };
}

/**
 * The headers `middleware` sets, worked out once; the function sets them from that list on a
 * response. helmet's are the same for every request here (no nonce, no per-request directive), and
 * this skips building the CSP string per request. Refuses a middleware that does anything else.
 */
export function fixedHeaders(middleware: RequestHandler): (res: ServerResponse) => void {
  const headers: [string, string][] = [];
  let passed = false;
  const probe = {
    setHeader: (name: string, value: unknown) => headers.push([name, String(value)]),
    removeHeader: () => {},
  };
  middleware({ headers: {} } as Request, probe as unknown as Response, () => (passed = true));
  if (!passed) throw new Error('fixedHeaders: the middleware did not pass the request on at once');
  return (res) => {
    for (const [name, value] of headers) res.setHeader(name, value);
  };
}

/** Lower-layer errors, translated once at the edge. */
function toBrokerError(error: unknown): BrokerError {
  if (error instanceof BrokerError) return error;
  if (isStoreDown(error))
    return new BrokerError('upstream_unavailable', 'The broker cannot reach its store.', {
      retryAfter: 5,
    });
  const status = (error as { status?: unknown; type?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new BrokerError('invalid_request', 'The request could not be read.');
  }
  return new BrokerError('server_error', 'unexpected error', { expose: false, cause: error });
}
