import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ACCOUNTS, DEMO_PASSWORD, type Account } from './accounts.ts';
import { licenseRoutes, toOAuthError } from './api.ts';
import { authorizeRoutes } from './authorize.ts';
import { controlRoutes, createControl, type SandboxControl } from './control.ts';
import { homePage } from './pages.ts';
import { createState, DEV_CLIENT, type SandboxClient } from './state.ts';

export { ACCOUNTS, DEMO_PASSWORD, LOCALES } from './accounts.ts';
export type { Account, License, Locale } from './accounts.ts';
export type { SandboxClock, SandboxControl } from './control.ts';
export type { ErrorBody, OAuthErrorCode } from './errors.ts';
export type { IssuedGrant, IssuedTokens } from './issued.ts';
export type {
  ActiveFault,
  Fault,
  FaultKind,
  FaultTarget,
  RedirectStatus,
  TokenGrant,
} from './faults.ts';
export {
  ACCESS_TOKEN_TTL_S,
  CODE_TTL_MS,
  DEV_CLIENT,
  PREFIX,
  TRANSACTION_TTL_MS,
} from './state.ts';
export type {
  Consent,
  Counters,
  RequestLogEntry,
  SandboxClient,
  ScriptedConsent,
  TokenResponse,
} from './state.ts';

/** Where the sandbox says it lives when nobody tells it (the broker's development AUTH_URL). */
export const DEFAULT_PUBLIC_URL = 'http://127.0.0.1:8788';

export interface SandboxOptions {
  /** Registered clients. Default: `[DEV_CLIENT]`. More can be registered through the control API. */
  clients?: readonly SandboxClient[];
  /** The clock, ms since the epoch. Default `Date.now`. The control clock offsets it. */
  now?: () => number;
  /** Exposes /_control/ and {api_url}/echo/. Default false. The in-process `control` always works. */
  control?: boolean;
  /** Whether presenting a used refresh token revokes its whole grant. Default false. */
  revokeOnRefreshReuse?: boolean;
  /**
   * The request log (control API) keeps only the latest this many entries. Default: every one
   * since the last reset. A load of minutes (the benchmarks) would otherwise keep every request
   * it made, and the sandbox's collections of that heap would stall whatever is measured.
   */
  requestLogLimit?: number;
  /**
   * The sandbox's own base URL, from which api_url is built (`${publicUrl}/licenses/<licenseId>`).
   * A function is read each time. Default: DEFAULT_PUBLIC_URL; startSandbox: its listening address.
   */
  publicUrl?: string | (() => string);
}

export interface Sandbox {
  /** The Express app; it does not listen. */
  readonly app: Express;
  readonly control: SandboxControl;
  /** The seeded accounts and their licenses (password DEMO_PASSWORD). */
  readonly accounts: readonly Account[];
  /** The api_url of a license: `${publicUrl}/licenses/<licenseId>`. */
  apiUrl(licenseId: string): string;
}

export interface RunningSandbox extends AsyncDisposable {
  /** Base URL (the authorization host, and the prefix of every api_url). */
  readonly url: string;
  readonly port: number;
  readonly sandbox: Sandbox;
  close(): Promise<void>;
}

export type StartSandboxOptions = SandboxOptions & { port?: number; host?: string };

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const state = createState({
    now: options.now ?? Date.now,
    clients: options.clients ?? [DEV_CLIENT],
    revokeOnRefreshReuse: options.revokeOnRefreshReuse ?? false,
    ...(options.requestLogLimit === undefined ? {} : { requestLogLimit: options.requestLogLimit }),
  });
  const control = createControl(state);
  const { publicUrl = DEFAULT_PUBLIC_URL } = options;
  const base = () => (typeof publicUrl === 'string' ? publicUrl : publicUrl()).replace(/\/+$/, '');
  const apiUrl = (licenseId: string): string =>
    `${base()}/licenses/${encodeURIComponent(licenseId)}`;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  app.get('/', (_req, res) => {
    res.format({
      html: () => {
        res.send(homePage({ accounts: ACCOUNTS, password: DEMO_PASSWORD, apiUrl }));
      },
      json: () => {
        res.json({
          password: DEMO_PASSWORD,
          accounts: ACCOUNTS.map(({ email, language, licenses }) => ({
            email,
            language,
            licenses: licenses.map(({ id, name }) => ({ id, name, api_url: apiUrl(id) })),
          })),
        });
      },
    });
  });
  app.use(authorizeRoutes(state, apiUrl));
  app.use('/licenses/:licenseId', licenseRoutes(state, { control: options.control ?? false }));
  if (options.control) app.use('/_control', controlRoutes(control));
  app.use((_req, res) => {
    res.status(404).json({ error: 'not_found', error_description: 'No such page.' });
  });
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const oauth = toOAuthError(error);
    res.status(oauth.status).json(oauth.toBody());
  });

  return { app, control, accounts: ACCOUNTS, apiUrl };
}

/** The host as it goes in a URL; a wildcard address becomes loopback. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Listens (port 0 picks a free port; host default 127.0.0.1) and knows its own URL. */
export async function startSandbox(options: StartSandboxOptions = {}): Promise<RunningSandbox> {
  const { port: wanted = 0, host = '127.0.0.1', ...sandboxOptions } = options;
  let url = typeof options.publicUrl === 'string' ? options.publicUrl.replace(/\/+$/, '') : '';
  const sandbox = createSandbox({ ...sandboxOptions, publicUrl: options.publicUrl ?? (() => url) });
  const server = createServer(sandbox.app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  if (url === '') url = `http://${urlHost(host)}:${port}`;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
    return closing;
  };
  return { url, port, sandbox, close, [Symbol.asyncDispose]: close };
}
