import type { Keyring } from '../base/crypto.ts';
import type { AdminTokenEntry } from './admin-tokens.ts';
import type { SessionLifetime } from '../connections/sessions.ts';
import type { Allowlist } from '../oauth/allowlist.ts';
import type { EventLimits } from '../ops/events.ts';
import type { RedisTopology } from '../store/redis/clients.ts';

/** Everything the broker reads from its environment, parsed once at start-up, by concern. */
export interface Config {
  production: boolean;
  /** Development fallbacks that were used, for a loud warning at start-up. */
  developmentDefaults: string[];
  /** The provider: where its authorization pages are, who we are to it, its allowed api_urls. */
  provider: {
    authUrl: string;
    clientId: string;
    clientSecret: string;
    /** `${PUBLIC_URL}/auth/callback`, the redirect_uri registered at the provider. */
    redirectUri: string;
    apiUrlAllowlist: Allowlist;
  };
  publicUrl: URL;
  extensionRedirectUrls: readonly string[];
  sessionSecrets: string[];
  keyring: Keyring;
  listen: { port: number; host: string; trustProxy: boolean | number | string };
  logLevel: string;
  redis: {
    /** REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES; undefined: the embedded store. */
    topology: RedisTopology | undefined;
    /** Entries of the client-side cache (REDIS_CACHE_ENTRIES, default 10,000; 0: off). */
    cacheEntries: number;
    /**
     * Replicas that must acknowledge each durable write (REDIS_WAIT_REPLICAS; default 1 with
     * Sentinel, whose point is failing over to a replica, else 0), and how long to wait for them.
     */
    waitReplicas: number;
    waitTimeoutMs: number;
  };
  refresh: {
    /** Refresh this long before expiry (REFRESH_AHEAD_SECONDS, default 300). */
    aheadMs: number;
    /**
     * After a refresh that did not cure an upstream 401, that connection's 401s are passed on
     * without a refresh for this long (REFRESH_MIN_INTERVAL_SECONDS, default 60).
     */
    minIntervalMs: number;
    /** Bound on one token request (TOKEN_TIMEOUT_MS, default 10 s). */
    tokenTimeoutMs: number;
    /** The refresh lock's lease (REFRESH_LEASE_MS, default token timeout + 5 s): outlives it. */
    leaseMs: number;
  };
  proxy: {
    /** Bound on one proxied call, start to last byte (PROXY_TIMEOUT_MS, default 30 s). */
    timeoutMs: number;
    /** Bound on one call's wait for a usable access token, in all (TOKEN_WAIT_MS, default 15 s). */
    tokenWaitMs: number;
    /** Bytes one proxied answer may relay (PROXY_MAX_ANSWER_BYTES, default 32 MiB). */
    maxAnswerBytes: number;
  };
  sessions: {
    /** SESSION_IDLE_TIMEOUT (seconds, default 30 days) and SESSION_MAX_AGE (optional). */
    lifetime: SessionLifetime;
    /** Failed session checks one client may make per minute, per instance. */
    failureLimit: number;
    /** Calls one session may make per minute, per instance (0: no limit). */
    rateLimit: number;
    /**
     * Requests to /auth/* one client address may make per minute, across instances
     * (AUTH_RATE_LIMIT, default 60: raise it where many users share an address).
     */
    signInLimit: number;
  };
  shutdown: {
    /** On SIGTERM, stay up but not ready this long first (SHUTDOWN_DELAY_MS, default 0). */
    delayMs: number;
    /** Bound on draining requests and refreshes (SHUTDOWN_TIMEOUT_MS, default 10 s). */
    timeoutMs: number;
  };
  metrics: {
    /** Bearer token for GET /metrics (METRICS_TOKEN). */
    token: string | undefined;
    /** A separate port serving only /metrics (METRICS_PORT). */
    port: number | undefined;
  };
  /**
   * The admin API (http/admin/), on a listener of its own: ADMIN_PORT (on HOST), and who may call
   * it, read from ADMIN_TOKENS_FILE at start-up (and read again when it changes: http/admin/).
   * Undefined: off (ADMIN_PORT unset).
   */
  admin: { port: number; tokensFile: string; tokens: readonly AdminTokenEntry[] } | undefined;
  events: {
    /** Where events go, signed with each secret (Standard Webhooks keys, decoded). */
    webhook: { url: string; secrets: Buffer[] } | undefined;
    /** EVENTS_OUTBOX_MAX, EVENTS_BACKLOG_MAX, EVENTS_DEAD_LETTERS_MAX (docs/events.md). */
    limits: EventLimits;
  };
  tracing: {
    /** Whether a caller's sampled flag decides (TRACE_TRUST_CALLER_SAMPLING, default false). */
    trustCallerSampling: boolean;
  };
}
