import express, { type NextFunction, type Request, type Response } from 'express';
import { findLicense, type Account, type License } from './accounts.ts';
import { OAuthError } from './errors.ts';
import type { Fault, FaultTarget } from './faults.ts';
import type { State, TokenResponse } from './state.ts';

/** Per request, for the fault and counter bookkeeping. */
interface Locals {
  target: FaultTarget;
  licenseId: string;
  /** Answered (or destroyed) by an injected fault, not by the endpoint's own rules. */
  faulted: boolean;
}
const locals = (res: Response): Locals => res.locals as Locals;

const FORM = 'application/x-www-form-urlencoded';

/** The user record of GET users.me: realistic, with nested objects and arrays. */
export function userRecord(account: Account, license: License) {
  return {
    id: account.id,
    name: `${account.firstName} ${account.lastName}`,
    first_name: account.firstName,
    last_name: account.lastName,
    email: account.email,
    language: account.language,
    locale: `${account.language}-BE`,
    timezone: 'Europe/Brussels',
    roles: ['owner', 'accountant'],
    license: {
      id: license.id,
      name: license.name,
      plan: license.plan,
      seats: license.seats,
      valid_until: license.validUntil,
      vat_number: license.vatNumber,
      address: { city: license.city, country: 'BE' },
      modules: license.modules,
    },
    preferences: { currency: 'EUR', date_format: 'dd/MM/yyyy', newsletter: false },
    created_at: '2019-04-02T08:15:00Z',
  };
}

/** Waits `ms`; false when the client went away meanwhile. */
const delay = (ms: number, res: Response): Promise<boolean> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(true);
    }, ms);
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    res.once('close', onClose);
  });

function answerFault(
  res: Response,
  fault: Extract<Fault, { kind: 'status' | 'redirect' | 'token_body' }>,
) {
  locals(res).faulted = true;
  res.set('Cache-Control', 'no-store');
  switch (fault.kind) {
    case 'status': {
      if (fault.retryAfter !== undefined) res.set('Retry-After', String(fault.retryAfter));
      if (fault.headers !== undefined) res.set(fault.headers);
      const error =
        fault.status >= 500 || fault.status === 429 ? 'temporarily_unavailable' : 'invalid_request';
      const body = fault.body ?? JSON.stringify({ error, error_description: 'Injected fault.' });
      res.status(fault.status).type('application/json').end(body);
      return;
    }
    case 'redirect':
      res
        .status(fault.status ?? 302)
        .set('Location', fault.location)
        .end();
      return;
    case 'token_body':
      res
        .status(fault.status ?? 200)
        .setHeader('Content-Type', fault.contentType ?? 'application/json');
      res.end(fault.body);
      return;
  }
}

/** The Bearer token of the Authorization header, checked against this license. */
function authenticate(state: State, req: Request, res: Response) {
  const header = req.headers.authorization;
  if (header === undefined) res.set('WWW-Authenticate', 'Bearer');
  const token = /^Bearer +([\x21-\x7e]+) *$/i.exec(header ?? '')?.[1];
  return state.authenticateBearer(locals(res).licenseId, token);
}

/**
 * Everything under `/licenses/:licenseId` (an api_url): the token endpoint, the API, and the echo
 * resource when the control API is enabled. Faults and counters apply here.
 */
export function licenseRoutes(state: State, options: { control: boolean }) {
  const router = express.Router({ caseSensitive: true, strict: true, mergeParams: true });

  router.use((req: Request<{ licenseId: string }>, res, next) => {
    const { licenseId } = req.params;
    const target: FaultTarget = req.path === '/oauth2/access_token' ? 'token' : 'api';
    Object.assign(res.locals, { target, licenseId, faulted: false } satisfies Locals);
    const entry = state.logRequest({
      target,
      licenseId,
      method: req.method,
      host: req.headers.host,
      path: req.originalUrl,
      headers: { ...req.headers },
      time: state.now(),
    });
    if (target === 'api') state.counters().api_calls++;
    res.on('finish', () => {
      entry.status = res.statusCode;
      const counters = state.counters();
      if (target === 'api' && res.statusCode === 401) counters.api_unauthorized++;
      if (target === 'token' && res.statusCode >= 400 && !locals(res).faulted)
        counters.token_errors++;
    });
    if (!findLicense(licenseId)) throw new OAuthError('not_found', 'There is no such license.');
    next();
  });

  router.use(async (_req, res, next) => {
    const match = { target: locals(res).target, licenseId: locals(res).licenseId };
    const latency = state.faults.take(['latency'], match);
    if (latency && !(await delay(latency.ms, res))) return;
    const cookie = state.faults.take(['set_cookie'], match);
    if (cookie) res.append('Set-Cookie', cookie.cookie);
    const answer = state.faults.take(['status', 'redirect', 'token_body'], match);
    if (answer) return answerFault(res, answer);
    next();
  });

  const formText = express.text({ type: FORM, limit: '16kb' });
  router.post('/oauth2/access_token', formText, (req, res) => {
    res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
    if (type !== FORM) throw new OAuthError('invalid_request', `The body must be ${FORM}.`);
    const form = new URLSearchParams(typeof req.body === 'string' ? req.body : '');
    for (const name of new Set(form.keys())) {
      if (form.getAll(name).length > 1)
        throw new OAuthError('invalid_request', `${name} appears more than once.`);
    }
    const field = (name: string): string => {
      const value = form.get(name);
      if (value === null) throw new OAuthError('invalid_request', `${name} is required.`);
      return value;
    };
    const client = state.authenticateClient(
      form.get('client_id') ?? undefined,
      form.get('client_secret') ?? undefined,
    );
    const { licenseId } = locals(res);
    const grantType = field('grant_type');
    let tokens: TokenResponse;
    if (grantType === 'auth_code') {
      tokens = state.exchangeCode({
        client,
        licenseId,
        code: field('code'),
        redirectUri: field('redirect_uri'),
      });
      state.counters().code_exchanges++;
    } else if (grantType === 'refresh_token') {
      tokens = state.refresh({ client, licenseId, refreshToken: field('refresh_token') });
      state.counters().refreshes++;
    } else {
      const hint = grantType === 'authorization_code' ? ' Use auth_code.' : '';
      throw new OAuthError(
        'unsupported_grant_type',
        `grant_type ${grantType} is not supported.${hint}`,
      );
    }
    if (
      state.faults.take(['drop_after_rotate'], { target: 'token', licenseId, grant: grantType })
    ) {
      locals(res).faulted = true;
      req.socket.destroy();
      return;
    }
    res.status(200).json(tokens);
  });

  router.get('/users.me', (req, res) => {
    const { account, license } = authenticate(state, req, res);
    res.json(userRecord(account, license));
  });

  if (options.control) {
    router.all('/echo{/*rest}', express.raw({ type: () => true, limit: '1mb' }), (req, res) => {
      authenticate(state, req, res);
      const [path = '', ...query] = req.originalUrl.split('?');
      res.json({
        method: req.method,
        path,
        query: query.join('?'),
        headers: req.headers,
        body: Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '',
      });
    });
  }

  const notAllowed = (allow: string) => (req: Request, res: Response) => {
    res.set('Allow', allow);
    throw new OAuthError('method_not_allowed', `${req.method} is not allowed here.`);
  };
  router.all('/oauth2/access_token', notAllowed('POST'));
  router.all('/users.me', notAllowed('GET, HEAD'));
  router.use(() => {
    throw new OAuthError('not_found', 'There is no such resource under this api_url.');
  });
  router.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const oauth = toOAuthError(error);
    if (oauth.code === 'invalid_token' && !res.get('WWW-Authenticate'))
      res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
    res.status(oauth.status).json(oauth.toBody());
  });
  return router;
}

/** Our own errors as they are; a body the parser refused is invalid_request; the rest, server_error. */
export function toOAuthError(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new OAuthError('invalid_request', 'The request body could not be read.');
  console.error('sandbox: unexpected error', error);
  return new OAuthError('server_error', 'The sandbox failed unexpectedly.');
}
