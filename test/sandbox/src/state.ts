import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  ACCOUNTS,
  findAccount,
  findLicense,
  type Account,
  type License,
  type Locale,
} from './accounts.ts';
import { ControlInputError, OAuthError } from './errors.ts';
import { createFaults, type FaultTarget } from './faults.ts';
import { parseIssuedTokens, type IssuedGrant, type IssuedTokens } from './issued.ts';

/** Lifetimes from the specification. A code issued at t is valid while now < t + CODE_TTL_MS. */
export const CODE_TTL_MS = 120_000;
/** An access token issued at t is valid while now < t + ACCESS_TOKEN_TTL_S * 1000. */
export const ACCESS_TOKEN_TTL_S = 3600;
/** How long a user has to get through the login, license and consent pages. */
export const TRANSACTION_TTL_MS = 15 * 60_000;

/** A registered integration, with the field names of the specification. */
export interface SandboxClient {
  client_id: string;
  client_secret: string;
  /** Compared with the authorization request's redirect_uri as exact strings. */
  redirect_uris: readonly string[];
  /** Shown on the consent page (default: the client_id). */
  name?: string;
}

/** The development client, matching the broker's development defaults. */
export const DEV_CLIENT: SandboxClient = {
  client_id: 'baton-dev',
  client_secret: 'sbx_secret_baton-development-only-0123456789abcdef',
  redirect_uris: ['http://127.0.0.1:8787/auth/callback'],
  name: 'Baton',
};

/**
 * What GET authorize does after validating the request. `approve` picks the license's owner, or the
 * account's first license, or by default the first seeded account's first license.
 */
export type Consent =
  | { mode: 'interactive' }
  | { mode: 'approve'; email?: string; licenseId?: string }
  | { mode: 'deny' };
/** A consent with the approving account and license settled. */
export type ScriptedConsent =
  Exclude<Consent, { mode: 'approve' }> | Required<Extract<Consent, { mode: 'approve' }>>;

export interface Counters {
  /** Successful auth_code exchanges. */
  code_exchanges: number;
  /** Successful refreshes (including those whose answer a `drop_after_rotate` fault destroyed). */
  refreshes: number;
  /** Error answers of the token endpoint's own rules (injected faults are not counted). */
  token_errors: number;
  /** Presentations of an already used refresh token. */
  reuse_detected: number;
  /** Requests under an api_url other than the token endpoint. */
  api_calls: number;
  /** Of those, the ones answered 401. */
  api_unauthorized: number;
}

export interface RequestLogEntry {
  target: FaultTarget;
  licenseId: string;
  method: string;
  /** The Host header as received. */
  host: string | undefined;
  /** Path with query, as received. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Sandbox clock, ms. */
  time: number;
  /** Status of the answer; undefined until answered, or when the socket was destroyed. */
  status?: number;
}

/** The token response, exactly as the specification lists it. */
export interface TokenResponse {
  token_type: 'Bearer';
  expires_in: typeof ACCESS_TOKEN_TTL_S;
  access_token: string;
  refresh_token: string;
}

/** A pending authorization, between GET authorize and the user's decision. */
export interface Transaction {
  id: string;
  locale: Locale;
  client: SandboxClient;
  redirectUri: string;
  /** Undefined when the request carried no state. */
  state: string | undefined;
  expiresAt: number;
  account?: Account;
  license?: License;
}

interface Code {
  clientId: string;
  redirectUri: string;
  licenseId: string;
  email: string;
  expiresAt: number;
}

type Grant = IssuedGrant;

interface AccessToken {
  grant: Grant;
  expiresAt: number;
}

interface RefreshToken {
  grant: Grant;
  used: boolean;
}

export const PREFIX = { code: 'sbx_code_', access: 'sbx_at_', refresh: 'sbx_rt_' } as const;

/** A prefix and 32 random bytes in base64url (43 characters). */
const randomValue = (prefix = ''): string => prefix + randomBytes(32).toString('base64url');

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
const safeEqual = (a: string, b: string): boolean => timingSafeEqual(digest(a), digest(b));

/** Who approves in scripted consent: the license's owner, the account's first license, or the first. */
function approver(email: string | undefined, licenseId: string | undefined) {
  const account = email === undefined ? undefined : findAccount(email);
  if (email !== undefined && !account) throw new ControlInputError(`There is no account ${email}`);
  if (licenseId === undefined) {
    const chosen = account ?? ACCOUNTS[0];
    const license = chosen?.licenses[0];
    if (!chosen || !license) throw new ControlInputError('There is no license to approve');
    return { email: chosen.email, licenseId: license.id };
  }
  const owner = findLicense(licenseId);
  if (!owner) throw new ControlInputError(`There is no license ${licenseId}`);
  if (account && owner.account !== account)
    throw new ControlInputError(`${account.email} does not own license ${licenseId}`);
  return { email: owner.account.email, licenseId };
}

const zeroCounters = (): Counters => ({
  code_exchanges: 0,
  refreshes: 0,
  token_errors: 0,
  reuse_detected: 0,
  api_calls: 0,
  api_unauthorized: 0,
});

export interface StateOptions {
  now: () => number;
  clients: readonly SandboxClient[];
  revokeOnRefreshReuse: boolean;
  /** The request log keeps the latest this many entries (default: every one since the reset). */
  requestLogLimit?: number;
}

/** Everything the sandbox remembers, in memory, and the rules of the specification over it. */
export function createState(options: StateOptions) {
  let offset = 0;
  const now = (): number => options.now() + offset;
  const clients = new Map<string, SandboxClient>();
  const transactions = new Map<string, Transaction>();
  const codes = new Map<string, Code>();
  const grants = new Map<string, Grant>();
  const accessTokens = new Map<string, AccessToken>();
  const refreshTokens = new Map<string, RefreshToken>();
  const secrets = new Set<string>();
  const settings = { revokeOnRefreshReuse: options.revokeOnRefreshReuse };
  let consent: ScriptedConsent = { mode: 'interactive' };
  let counters = zeroCounters();
  let requests: RequestLogEntry[] = [];
  const limit = options.requestLogLimit;
  const faults = createFaults();

  const issue = (prefix: string): string => {
    const value = randomValue(prefix);
    secrets.add(value);
    return value;
  };

  function registerClient(client: SandboxClient): void {
    const { client_id, client_secret, redirect_uris } = client;
    if (typeof client_id !== 'string' || client_id === '')
      throw new ControlInputError('client_id must be a non-empty string');
    if (typeof client_secret !== 'string' || client_secret === '')
      throw new ControlInputError('client_secret must be a non-empty string');
    if (!Array.isArray(redirect_uris) || redirect_uris.length === 0)
      throw new ControlInputError('redirect_uris must be a non-empty array');
    for (const uri of redirect_uris as unknown[]) {
      if (typeof uri !== 'string' || !URL.canParse(uri) || uri.includes('#'))
        throw new ControlInputError(`redirect_uris: not an absolute URL without fragment: ${uri}`);
    }
    const registered: SandboxClient = {
      client_id,
      client_secret,
      redirect_uris: [...redirect_uris],
    };
    if (typeof client.name === 'string') registered.name = client.name;
    clients.set(client_id, registered);
    secrets.add(client_secret);
  }
  for (const client of options.clients) registerClient(client);

  function issueTokens(grant: Grant): TokenResponse {
    const access_token = issue(PREFIX.access);
    const refresh_token = issue(PREFIX.refresh);
    accessTokens.set(access_token, { grant, expiresAt: now() + ACCESS_TOKEN_TTL_S * 1000 });
    refreshTokens.set(refresh_token, { grant, used: false });
    return { token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_S, access_token, refresh_token };
  }

  const grantMatches = (
    grant: { licenseId: string; email: string },
    target: { licenseId?: string; email?: string },
  ): boolean =>
    (target.licenseId === undefined || grant.licenseId === target.licenseId) &&
    (target.email === undefined || grant.email === target.email.toLowerCase());

  return {
    now,
    clock: {
      now,
      /** From now on, now() reads `ms` at this instant and follows the injected clock. */
      set(ms: number): void {
        offset = ms - options.now();
      },
      advance(ms: number): void {
        offset += ms;
      },
    },
    settings,
    faults,
    registerClient,
    findClient: (clientId: string): SandboxClient | undefined => clients.get(clientId),
    clients: (): SandboxClient[] => [...clients.values()],

    get consent(): ScriptedConsent {
      return consent;
    },
    setConsent(next: Consent): void {
      if (next.mode === 'approve') {
        consent = { mode: 'approve', ...approver(next.email, next.licenseId) };
      } else if (next.mode === 'interactive' || next.mode === 'deny') {
        consent = { mode: next.mode };
      } else {
        throw new ControlInputError('consent.mode must be interactive, approve or deny');
      }
    },

    startTransaction(input: Omit<Transaction, 'id' | 'expiresAt'>): Transaction {
      for (const [id, pending] of transactions)
        if (pending.expiresAt <= now()) transactions.delete(id);
      const transaction = { ...input, id: randomValue(), expiresAt: now() + TRANSACTION_TTL_MS };
      transactions.set(transaction.id, transaction);
      return transaction;
    },
    findTransaction(id: string): Transaction | undefined {
      const transaction = transactions.get(id);
      return transaction && transaction.expiresAt > now() ? transaction : undefined;
    },
    /** Reads and deletes: a second decision on the same transaction finds nothing. */
    takeTransaction(id: string): Transaction | undefined {
      const transaction = transactions.get(id);
      transactions.delete(id);
      return transaction && transaction.expiresAt > now() ? transaction : undefined;
    },

    checkPassword(email: string, password: string): Account | undefined {
      const account = findAccount(email);
      return account && safeEqual(account.password, password) ? account : undefined;
    },

    /** Authenticates the client by the client_id and client_secret of the form body. */
    authenticateClient(clientId: string | undefined, secret: string | undefined): SandboxClient {
      const client = clientId === undefined ? undefined : clients.get(clientId);
      if (!client || secret === undefined || !safeEqual(client.client_secret, secret))
        throw new OAuthError('invalid_client', 'Client authentication failed.');
      return client;
    },

    issueCode(input: { clientId: string; redirectUri: string; licenseId: string; email: string }) {
      const code = issue(PREFIX.code);
      codes.set(code, { ...input, expiresAt: now() + CODE_TTL_MS });
      return code;
    },

    /** grant_type=auth_code. The code is consumed before it is checked: a replay finds nothing. */
    exchangeCode(input: {
      client: SandboxClient;
      licenseId: string;
      code: string;
      redirectUri: string;
    }): TokenResponse {
      const code = codes.get(input.code);
      codes.delete(input.code);
      const invalid = (why: string) => new OAuthError('invalid_grant', why);
      if (!code) throw invalid('The authorization code is unknown or was already used.');
      if (now() >= code.expiresAt) throw invalid('The authorization code expired.');
      if (code.clientId !== input.client.client_id)
        throw invalid('The authorization code was issued to another client.');
      if (code.redirectUri !== input.redirectUri)
        throw invalid('redirect_uri does not match the authorization request.');
      if (code.licenseId !== input.licenseId)
        throw invalid('The authorization code was issued for another license.');
      const grant: Grant = {
        id: randomValue(),
        clientId: code.clientId,
        licenseId: code.licenseId,
        email: code.email,
        revoked: false,
      };
      grants.set(grant.id, grant);
      return issueTokens(grant);
    },

    /** grant_type=refresh_token: single use, rotating; a reuse is counted (and may revoke). */
    refresh(input: {
      client: SandboxClient;
      licenseId: string;
      refreshToken: string;
    }): TokenResponse {
      const record = refreshTokens.get(input.refreshToken);
      const invalid = (why: string) => new OAuthError('invalid_grant', why);
      if (!record) throw invalid('The refresh token is unknown.');
      const { grant } = record;
      if (grant.clientId !== input.client.client_id)
        throw invalid('The refresh token was issued to another client.');
      if (grant.licenseId !== input.licenseId)
        throw invalid('The refresh token was issued for another license.');
      if (record.used) {
        counters.reuse_detected++;
        if (settings.revokeOnRefreshReuse) grant.revoked = true;
        throw invalid('The refresh token was already used.');
      }
      if (grant.revoked) throw invalid('The grant was revoked.');
      record.used = true;
      return issueTokens(grant);
    },

    /** The license and account behind a Bearer token presented at `licenseId`'s api_url. */
    authenticateBearer(licenseId: string, token: string | undefined) {
      const invalid = (why: string) => new OAuthError('invalid_token', why);
      const record = token === undefined ? undefined : accessTokens.get(token);
      if (!record) throw invalid('The access token is unknown.');
      if (record.grant.licenseId !== licenseId)
        throw invalid('The access token belongs to another license.');
      if (record.grant.revoked) throw invalid('The access token was revoked.');
      if (now() >= record.expiresAt) throw invalid('The access token expired.');
      const owner = findLicense(licenseId);
      if (!owner) throw invalid('The license no longer exists.');
      return owner;
    },

    /** What the user does by revoking the integration: every token of the grants stops working. */
    revokeGrants(target: { licenseId?: string; email?: string }): number {
      if (target.licenseId === undefined && target.email === undefined)
        throw new ControlInputError('revoke needs a licenseId or an email');
      let revoked = 0;
      for (const grant of grants.values()) {
        if (!grant.revoked && grantMatches(grant, target)) {
          grant.revoked = true;
          revoked++;
        }
      }
      for (const [value, code] of codes) if (grantMatches(code, target)) codes.delete(value);
      return revoked;
    },

    expireAccessTokens(licenseId: string): number {
      let expired = 0;
      for (const record of accessTokens.values()) {
        if (record.grant.licenseId === licenseId && record.expiresAt > now()) {
          record.expiresAt = now();
          expired++;
        }
      }
      return expired;
    },

    counters: (): Counters => counters,
    requests: (): RequestLogEntry[] => (limit === undefined ? requests : requests.slice(-limit)),
    logRequest(entry: RequestLogEntry): RequestLogEntry {
      requests.push(entry);
      // Trimmed in halves, so that each entry is moved at most once.
      if (limit !== undefined && requests.length >= 2 * limit) requests = requests.slice(-limit);
      return entry;
    },
    secrets: (): string[] => [...secrets],

    /** Every grant, its access and refresh tokens and every secret, as data (IssuedTokens). */
    exportTokens(): IssuedTokens {
      return {
        grants: [...grants.values()].map((grant) => ({ ...grant })),
        accessTokens: [...accessTokens].map(([token, { grant, expiresAt }]) => ({
          token,
          grant: grant.id,
          expiresAt,
        })),
        refreshTokens: [...refreshTokens].map(([token, { grant, used }]) => ({
          token,
          grant: grant.id,
          used,
        })),
        secrets: [...secrets],
      };
    },

    /**
     * Adds what another sandbox exported: afterwards its tokens work here as they did there (on
     * this sandbox's clock). Checked whole before anything is added: a bad input adds nothing.
     */
    importTokens(input: unknown): { grants: number; accessTokens: number; refreshTokens: number } {
      const issued = parseIssuedTokens(input, {
        knownGrants: (id) => grants.has(id),
        prefix: PREFIX,
      });
      for (const grant of issued.grants) grants.set(grant.id, { ...grant });
      const grantOf = (id: string): Grant => grants.get(id)!;
      for (const { token, grant, expiresAt } of issued.accessTokens)
        accessTokens.set(token, { grant: grantOf(grant), expiresAt });
      for (const { token, grant, used } of issued.refreshTokens)
        refreshTokens.set(token, { grant: grantOf(grant), used });
      for (const secret of issued.secrets) secrets.add(secret);
      for (const { token } of [...issued.accessTokens, ...issued.refreshTokens]) secrets.add(token);
      return {
        grants: issued.grants.length,
        accessTokens: issued.accessTokens.length,
        refreshTokens: issued.refreshTokens.length,
      };
    },
    /** Counters, request log and faults back to empty. Tokens, clients, clock and consent stay. */
    reset(): void {
      counters = zeroCounters();
      requests = [];
      faults.clear();
    },
  };
}
export type State = ReturnType<typeof createState>;
