import { randomBytes } from 'node:crypto';
import { CLIENT_ID, CLIENT_SECRET, EXTENSION_REDIRECT } from './stack.ts';

export interface BrokerEnvOptions {
  /** The provider's address as the broker sees it (the sandbox, or the TLS terminator before it). */
  providerUrl: string;
  publicUrl: string;
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
 * The one way every test world builds a broker's environment: the test client, fresh secrets,
 * the sandbox as provider, a Redis, then what the world changes. Worlds differ only in these
 * parameters (how many brokers, in process or not, which Redis topology, TLS in front or not).
 */
export function brokerEnv(options: BrokerEnvOptions): Record<string, string> {
  return {
    AUTH_URL: options.providerUrl,
    CLIENT_ID: options.client?.id ?? CLIENT_ID,
    CLIENT_SECRET: options.client?.secret ?? CLIENT_SECRET,
    PUBLIC_URL: options.publicUrl,
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
