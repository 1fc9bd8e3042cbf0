import express, { type NextFunction, type Request, type Response } from 'express';
import { ControlInputError } from './errors.ts';
import type { ActiveFault, Fault } from './faults.ts';
import type { IssuedTokens } from './issued.ts';
import type {
  Consent,
  Counters,
  RequestLogEntry,
  SandboxClient,
  ScriptedConsent,
  State,
} from './state.ts';

export interface SandboxClock {
  /** The sandbox's current time, ms. */
  now(): number;
  /** now() reads `ms` at this instant, then keeps following the injected clock. */
  set(ms: number): void;
  advance(ms: number): void;
}

/** The control API, in process. Over HTTP under /_control/ when the sandbox has `control: true`. */
export interface SandboxControl {
  /** Registers a client, or replaces the one with the same client_id. */
  registerClient(client: SandboxClient): void;
  clients(): SandboxClient[];
  readonly clock: SandboxClock;
  /** What GET authorize does once the request is valid: show pages, approve or deny at once. */
  setConsent(consent: Consent): void;
  /** The consent in force, with the approving account and license settled. */
  consent(): ScriptedConsent;
  /** When on, presenting a used refresh token revokes its whole grant. */
  setRevokeOnRefreshReuse(on: boolean): void;
  /**
   * Revokes the grants of a license (a license id, or `{ licenseId }`), of an account (`{ email }`),
   * or both filters at once; returns how many.
   */
  revokeGrant(target: string | { licenseId?: string; email?: string }): number;
  /** Every live access token of the license expires now; returns how many. */
  expireAccessTokens(licenseId: string): number;
  addFault(fault: Fault): ActiveFault;
  clearFaults(): void;
  faults(): ActiveFault[];
  counters(): Counters;
  requests(): RequestLogEntry[];
  /** Every code, access token, refresh token and client secret the sandbox issued or knows. */
  secrets(): string[];
  /** Empties counters, request log and faults. */
  reset(): void;
  /**
   * Every grant, its access tokens (with their expiry) and refresh tokens (used or not), and
   * `secrets()`: what a test needs to stand up another sandbox that honours the same tokens.
   */
  exportTokens(): IssuedTokens;
  /**
   * Adds another sandbox's export: its tokens then work here as they did there, on this sandbox's
   * clock. Checked whole first: a malformed input throws and adds nothing. Returns how many.
   */
  importTokens(tokens: IssuedTokens): {
    grants: number;
    accessTokens: number;
    refreshTokens: number;
  };
}

export function createControl(state: State): SandboxControl {
  return {
    registerClient: (client) => state.registerClient(client),
    clients: () => state.clients().map((client) => ({ ...client })),
    clock: state.clock,
    setConsent: (consent) => state.setConsent(consent),
    consent: () => ({ ...state.consent }),
    setRevokeOnRefreshReuse(on) {
      state.settings.revokeOnRefreshReuse = on;
    },
    revokeGrant: (target) =>
      state.revokeGrants(typeof target === 'string' ? { licenseId: target } : target),
    expireAccessTokens: (licenseId) => state.expireAccessTokens(licenseId),
    addFault: (fault) => state.faults.add(fault),
    clearFaults: () => state.faults.clear(),
    faults: () => state.faults.list(),
    counters: () => ({ ...state.counters() }),
    requests: () => state.requests().map((entry) => structuredClone(entry)),
    secrets: () => state.secrets(),
    reset: () => state.reset(),
    exportTokens: () => state.exportTokens(),
    importTokens: (tokens) => state.importTokens(tokens),
  };
}

type Body = Record<string, unknown>;

function optionalString(body: Body, name: string): string | undefined {
  const value = body[name];
  if (value !== undefined && typeof value !== 'string')
    throw new ControlInputError(`${name} must be a string`);
  return value;
}

function number(body: Body, name: string): number {
  const value = body[name];
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new ControlInputError(`${name} must be a finite number`);
  return value;
}

function consentOf(body: Body): Consent {
  const email = optionalString(body, 'email');
  const licenseId = optionalString(body, 'licenseId');
  if (body.mode === 'approve') {
    const consent: Consent = { mode: 'approve' };
    if (email !== undefined) consent.email = email;
    if (licenseId !== undefined) consent.licenseId = licenseId;
    return consent;
  }
  if (body.mode === 'interactive' || body.mode === 'deny') return { mode: body.mode };
  throw new ControlInputError('mode must be interactive, approve or deny');
}

/** JSON endpoints over the same operations; mounted at /_control only when control is enabled. */
export function controlRoutes(control: SandboxControl) {
  const router = express.Router({ caseSensitive: true, strict: true });
  router.use(express.json({ limit: '64kb' }));
  const body = (req: Request): Body =>
    typeof req.body === 'object' && req.body !== null ? (req.body as Body) : {};

  router.get('/clients', (_req, res) => {
    res.json({ clients: control.clients() });
  });
  router.post('/clients', (req, res) => {
    control.registerClient(body(req) as unknown as SandboxClient);
    res.json({ client_id: body(req).client_id });
  });

  router.get('/clock', (_req, res) => {
    res.json({ now: control.clock.now() });
  });
  router.post('/clock/set', (req, res) => {
    control.clock.set(number(body(req), 'now'));
    res.json({ now: control.clock.now() });
  });
  router.post('/clock/advance', (req, res) => {
    control.clock.advance(number(body(req), 'ms'));
    res.json({ now: control.clock.now() });
  });

  router.get('/consent', (_req, res) => {
    res.json({ consent: control.consent() });
  });
  router.post('/consent', (req, res) => {
    control.setConsent(consentOf(body(req)));
    res.json({ consent: control.consent() });
  });
  router.post('/settings', (req, res) => {
    const on = body(req).revokeOnRefreshReuse;
    if (typeof on !== 'boolean')
      throw new ControlInputError('revokeOnRefreshReuse must be a boolean');
    control.setRevokeOnRefreshReuse(on);
    res.json({ revokeOnRefreshReuse: on });
  });

  router.post('/revoke', (req, res) => {
    const target: { licenseId?: string; email?: string } = {};
    const licenseId = optionalString(body(req), 'licenseId');
    const email = optionalString(body(req), 'email');
    if (licenseId !== undefined) target.licenseId = licenseId;
    if (email !== undefined) target.email = email;
    res.json({ revoked: control.revokeGrant(target) });
  });
  router.post('/expire-access-tokens', (req, res) => {
    const licenseId = optionalString(body(req), 'licenseId');
    if (licenseId === undefined) throw new ControlInputError('licenseId is required');
    res.json({ expired: control.expireAccessTokens(licenseId) });
  });

  router.get('/faults', (_req, res) => {
    res.json({ faults: control.faults() });
  });
  router.post('/faults', (req, res) => {
    res.status(201).json({ fault: control.addFault(body(req) as unknown as Fault) });
  });
  router.delete('/faults', (_req, res) => {
    control.clearFaults();
    res.json({ faults: [] });
  });

  router.get('/counters', (_req, res) => {
    res.json(control.counters());
  });
  router.get('/requests', (_req, res) => {
    res.json({ requests: control.requests() });
  });
  router.get('/secrets', (_req, res) => {
    res.json({ secrets: control.secrets() });
  });
  router.get('/tokens', (_req, res) => {
    res.json(control.exportTokens());
  });
  router.post('/tokens', (req, res) => {
    res.json(control.importTokens(body(req) as unknown as IssuedTokens));
  });
  router.post('/reset', (_req, res) => {
    control.reset();
    res.json({ counters: control.counters() });
  });

  router.use((_req, res) => {
    res.status(404).json({ error: 'not_found', error_description: 'No such control endpoint.' });
  });
  router.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const status = (error as { status?: unknown } | null)?.status;
    if (error instanceof ControlInputError || (typeof status === 'number' && status < 500)) {
      res
        .status(400)
        .json({ error: 'invalid_request', error_description: (error as Error).message });
      return;
    }
    next(error);
  });
  return router;
}
