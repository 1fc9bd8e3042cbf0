import { randomBytes } from 'node:crypto';

/**
 * The one integration every test world registers at the sandbox and gives its brokers (the
 * recorded upgrade fixture keeps its own). Import them from world.ts.
 */
export const CLIENT_ID = 'baton-test';
export const CLIENT_SECRET = 'sbx_secret_integration-tests-0123456789abcdef';
/** The extension's redirect URL the brokers allow (EXTENSION_REDIRECT_URLS). */
export const EXTENSION_REDIRECT = 'https://test-extension.chromiumapp.org/';

export interface BrokerEnvOptions {
  /** The provider's address as the broker sees it (the sandbox, or the TLS terminator before it). */
  providerUrl: string;
  /** Absent: a broker answers at its own address (BrokerProcess and in-process.ts default it). */
  publicUrl?: string | undefined;
  /** Where its Redis is: `{ REDIS_URL }`, `{ REDIS_SENTINEL }` or `{ REDIS_CLUSTER_NODES }`. */
  redis: Record<string, string>;
  /** Further api_url origins the allowlist accepts (a gate, a wildcard). */
  alsoAllowed?: readonly string[];
  /**
   * The broker runs on the real clock, and its tests make thousands of calls with one session: no
   * per-session limit then (the integration suite pins it on the injected clock). The refresh
   * budget stays at its default: tokens expired many times a minute must each be refreshed.
   * Default true.
   */
  realClock?: boolean;
  /** The integration registered at the sandbox (default: the tests' CLIENT_ID and secret). */
  client?: { id: string; secret: string };
  /** null: leave EXTENSION_REDIRECT_URLS to its development default (the built extension's ids). */
  extensionRedirectUrls?: string | null;
  /** Anything else, last. */
  extra?: Record<string, string>;
}

/**
 * A broker's environment: the test client, fresh secrets, the sandbox as provider, a Redis, then
 * what the caller changes. world.ts builds every world's with it; a script that runs an earlier
 * release's broker with a client of its own (test/upgrade/record.ts) uses it directly.
 */
export function brokerEnv(options: BrokerEnvOptions): Record<string, string> {
  return {
    AUTH_URL: options.providerUrl,
    CLIENT_ID: options.client?.id ?? CLIENT_ID,
    CLIENT_SECRET: options.client?.secret ?? CLIENT_SECRET,
    ...(options.publicUrl === undefined ? {} : { PUBLIC_URL: options.publicUrl }),
    API_URL_ALLOWLIST: [options.providerUrl, ...(options.alsoAllowed ?? [])].join(','),
    ...(options.extensionRedirectUrls === null
      ? {}
      : { EXTENSION_REDIRECT_URLS: options.extensionRedirectUrls ?? EXTENSION_REDIRECT }),
    SESSION_SECRET: `test-session-secret-${randomBytes(16).toString('hex')}`,
    TOKEN_ENCRYPTION_KEYS: `k:${randomBytes(32).toString('base64')}`,
    ...options.redis,
    ...(options.realClock === false ? {} : { SESSION_RATE_LIMIT: '0' }),
    ...options.extra,
  };
}
