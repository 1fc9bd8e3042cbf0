import { DEFAULT_EVENT_LIMITS, parseWebhookSecret, type EventLimits } from './ops/events.ts';
import { DEV_EXTENSION_REDIRECT_URLS } from '@baton/shared';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseAllowlist, type Allowlist } from './oauth/allowlist.ts';
import { DEFAULT_MAX_ANSWER_BYTES } from './connections/proxy.ts';
import { parseKeyring, type Keyring } from './crypto.ts';
import type { SessionLifetime } from './connections/sessions.ts';
import { parseClusterNodes, parseSentinel, type RedisTopology } from './store/redis/clients.ts';

/** Everything the broker reads from its environment, parsed once at start-up. */
export interface Config {
  production: boolean;
  /** Development fallbacks that were used, for a loud warning at start-up. */
  developmentDefaults: string[];
  authUrl: string;
  clientId: string;
  clientSecret: string;
  publicUrl: URL;
  /** `${PUBLIC_URL}/auth/callback`, the redirect_uri registered at the provider. */
  redirectUri: string;
  apiUrlAllowlist: Allowlist;
  extensionRedirectUrls: readonly string[];
  sessionSecrets: string[];
  keyring: Keyring;
  /** REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES; undefined: the embedded store. */
  redis: RedisTopology | undefined;
  /** Entries of the client-side cache of records (REDIS_CACHE_ENTRIES, default 10,000; 0: off). */
  redisCacheEntries: number;
  /**
   * Replicas that must acknowledge each durable write (REDIS_WAIT_REPLICAS; default 1 with
   * Sentinel, whose point is failing over to a replica, else 0).
   */
  redisWaitReplicas: number;
  redisWaitTimeoutMs: number;
  port: number;
  host: string;
  trustProxy: boolean | number | string;
  logLevel: string;
  refreshAheadMs: number;
  /**
   * After a refresh that did not cure an upstream 401, that connection's 401s are passed on
   * without a refresh for this long (REFRESH_MIN_INTERVAL_SECONDS, default 60).
   */
  refreshMinIntervalMs: number;
  /** Bound on one proxied call, start to last byte (PROXY_TIMEOUT_MS, default 30 s). */
  proxyTimeoutMs: number;
  /** Bytes one proxied answer may relay (PROXY_MAX_ANSWER_BYTES, default 32 MiB). */
  proxyMaxAnswerBytes: number;
  /** Bound on one token request (TOKEN_TIMEOUT_MS, default 10 s). */
  tokenTimeoutMs: number;
  /** Refresh lock lease (REFRESH_LEASE_MS, default TOKEN_TIMEOUT_MS + 5 s): outlives a request. */
  refreshLeaseMs: number;
  /** On SIGTERM, stay up but not ready this long first (SHUTDOWN_DELAY_MS, default 0). */
  shutdownDelayMs: number;
  /** Bound on draining requests and refreshes at shutdown (SHUTDOWN_TIMEOUT_MS, default 10 s). */
  shutdownTimeoutMs: number;
  /** SESSION_IDLE_TIMEOUT (seconds, default 30 days) and SESSION_MAX_AGE (seconds, optional). */
  sessionLifetime: SessionLifetime;
  /** Failed session checks one address may make per minute, per instance (SESSION_FAILURE_LIMIT). */
  sessionFailureLimit: number;
  /** Calls one session may make per minute, per instance (SESSION_RATE_LIMIT; 0: no limit). */
  sessionRateLimit: number;
  /** Bearer token for GET /metrics on the main port (METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** A separate port serving only /metrics (METRICS_PORT). */
  metricsPort: number | undefined;
  /** Where connection events are POSTed, signed with the secret; both or neither. */
  /** Where events go, signed with each secret (Standard Webhooks keys, decoded). */
  eventsWebhook: { url: string; secrets: Buffer[] } | undefined;
  /**
   * Whether a caller's sampled flag decides whether its request is traced
   * (TRACE_TRUST_CALLER_SAMPLING, default false: the configured sampler's own rule does).
   */
  traceTrustCallerSampling: boolean;
  /** EVENTS_OUTBOX_MAX, EVENTS_BACKLOG_MAX, EVENTS_DEAD_LETTERS_MAX (docs/events.md). */
  eventLimits: EventLimits;
}

const DEV = {
  AUTH_URL: 'http://127.0.0.1:8788',
  CLIENT_ID: 'baton-dev',
  CLIENT_SECRET: 'sbx_secret_baton-development-only-0123456789abcdef',
  API_URL_ALLOWLIST: 'http://127.0.0.1:8788',
  SESSION_SECRET: 'development-only-session-secret-do-not-deploy',
  TOKEN_ENCRYPTION_KEYS: 'dev:YmF0b24tZGV2ZWxvcG1lbnQtb25seS1rZXktMDAwMDA=',
} as const;

const list = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const schema = z.object({
  NODE_ENV: z.string().optional(),
  AUTH_URL: httpUrl,
  CLIENT_ID: z.string().min(1),
  CLIENT_SECRET: z.string().min(1),
  PUBLIC_URL: httpUrl,
  API_URL_ALLOWLIST: z.string().min(1),
  EXTENSION_REDIRECT_URLS: z.string().min(1, 'must list at least one extension redirect URL'),
  SESSION_SECRET: z
    .string()
    .transform(list)
    .refine((secrets) => secrets.length > 0 && secrets.every((secret) => secret.length >= 32), {
      error: 'every secret must be at least 32 characters',
    }),
  TOKEN_ENCRYPTION_KEYS: z.string().min(1),
  REDIS_URL: z
    .url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' })
    .optional(),
  REDIS_SENTINEL: z.string().optional(),
  REDIS_CLUSTER_NODES: z.string().optional(),
  REDIS_USERNAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  REDIS_CACHE_ENTRIES: z.coerce.number().int().min(0).max(10_000_000).default(10_000),
  REDIS_WAIT_REPLICAS: z.coerce.number().int().min(0).max(16).optional(),
  REDIS_WAIT_TIMEOUT_MS: z.coerce.number().int().min(1).max(900).default(250),
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  TRUST_PROXY: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  REFRESH_AHEAD_SECONDS: z.coerce.number().int().min(0).max(3000).default(300),
  REFRESH_MIN_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  TOKEN_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  PROXY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  PROXY_MAX_ANSWER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(DEFAULT_MAX_ANSWER_BYTES),
  REFRESH_LEASE_MS: z.coerce.number().int().min(200).max(600_000).optional(),
  SHUTDOWN_DELAY_MS: z.coerce.number().int().min(0).max(300_000).default(0),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  SESSION_IDLE_TIMEOUT: z.coerce
    .number()
    .int()
    .min(3600, 'must be at least 3600 (an hour: use renews a session once an hour)')
    .max(365 * 24 * 3600)
    .default(30 * 24 * 3600),
  SESSION_MAX_AGE: z.coerce
    .number()
    .int()
    .min(3600)
    .max(10 * 365 * 24 * 3600)
    .optional(),
  SESSION_FAILURE_LIMIT: z.coerce.number().int().min(1).max(100_000).default(30),
  SESSION_RATE_LIMIT: z.coerce.number().int().min(0).max(10_000_000).default(600),
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  EVENTS_WEBHOOK_URL: httpUrl.optional(),
  EVENTS_WEBHOOK_SECRET: z
    .string()
    .refine(
      (value) => value.split(',').every((secret) => parseWebhookSecret(secret.trim()) !== null),
      'must be whsec_ and the base64 of 24 to 64 random bytes (echo "whsec_$(openssl rand -base64 32)"); during a rotation, several, comma-separated',
    )
    .optional(),
  TRACE_TRUST_CALLER_SAMPLING: z.enum(['true', 'false']).default('false'),
  EVENTS_OUTBOX_MAX: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(DEFAULT_EVENT_LIMITS.perSession),
  EVENTS_BACKLOG_MAX: z.coerce
    .number()
    .int()
    .min(100)
    .max(100_000_000)
    .default(DEFAULT_EVENT_LIMITS.backlog),
  EVENTS_DEAD_LETTERS_MAX: z.coerce
    .number()
    .int()
    .min(16)
    .max(10_000_000)
    .default(DEFAULT_EVENT_LIMITS.deadLetters),
});

/** Thrown with every problem named, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const REQUIRED_IN_PRODUCTION = [
  'AUTH_URL',
  'CLIENT_ID',
  'CLIENT_SECRET',
  'PUBLIC_URL',
  'API_URL_ALLOWLIST',
  'EXTENSION_REDIRECT_URLS',
  'SESSION_SECRET',
  'TOKEN_ENCRYPTION_KEYS',
] as const;

const REDIS_LOCATIONS = ['REDIS_URL', 'REDIS_SENTINEL', 'REDIS_CLUSTER_NODES'] as const;

/**
 * Secrets that may also come from a file, as Docker and Kubernetes mount them: NAME_FILE holds the
 * path, and the file's content (less a trailing newline) is the value. Not both.
 */
export const FILE_SECRETS = [
  'CLIENT_SECRET',
  'SESSION_SECRET',
  'TOKEN_ENCRYPTION_KEYS',
  'METRICS_TOKEN',
  'EVENTS_WEBHOOK_SECRET',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
] as const;

/** Every variable loadConfig reads (the `*_FILE` forms aside), for the docs and .env.example. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** The development fallbacks of these are public: all three fall back together, or none does. */
const SECRETS = ['CLIENT_SECRET', 'SESSION_SECRET', 'TOKEN_ENCRYPTION_KEYS'] as const;

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

export function loadConfig(env: Record<string, string | undefined>): Config {
  const production = env.NODE_ENV === 'production';
  const problems: string[] = [];
  const developmentDefaults: string[] = [];
  const input: Record<string, string | undefined> = { ...env };
  for (const [name, value] of Object.entries(input)) if (value === '') input[name] = undefined;
  for (const name of FILE_SECRETS) {
    const path = input[`${name}_FILE`];
    if (path === undefined) continue;
    if (input[name] !== undefined) {
      problems.push(`${name} and ${name}_FILE are both set: set one of them`);
      continue;
    }
    try {
      input[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(
        `${name}_FILE names a file that cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${path}`,
      );
    }
  }

  if (production) {
    for (const name of REQUIRED_IN_PRODUCTION) {
      if (input[name] === undefined) problems.push(`${name} is required when NODE_ENV=production`);
    }
    if (REDIS_LOCATIONS.every((name) => input[name] === undefined))
      problems.push(
        'REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required when NODE_ENV=production (the embedded store loses everything on restart and is not shared between instances)',
      );
  } else {
    const given = SECRETS.filter((name) => input[name] !== undefined);
    if (given.length > 0 && given.length < SECRETS.length)
      for (const name of SECRETS.filter((secret) => input[secret] === undefined))
        problems.push(
          `${name} is required once ${given.join(' or ')} is set: the development fallbacks are public, and are used only when no secret is set`,
        );
    const port = input.PORT ?? '8787';
    const fallbacks: Record<string, string> = {
      ...DEV,
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      EXTENSION_REDIRECT_URLS: DEV_EXTENSION_REDIRECT_URLS.join(','),
    };
    for (const [name, value] of Object.entries(fallbacks)) {
      if (input[name] === undefined) {
        input[name] = value;
        developmentDefaults.push(name);
      }
    }
    if (REDIS_LOCATIONS.every((name) => input[name] === undefined))
      developmentDefaults.push('REDIS_URL (embedded store)');
  }

  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.join('.');
      if (!problems.some((problem) => problem.startsWith(`${name} `)))
        problems.push(`${name} ${issue.message}`);
    }
    throw new ConfigError(problems);
  }
  const values = parsed.data;

  const named = <T>(name: string, parse: () => T): T | undefined => {
    try {
      return parse();
    } catch (error) {
      problems.push(`${name} ${(error as Error).message}`);
      return undefined;
    }
  };
  const apiUrlAllowlist = named('API_URL_ALLOWLIST', () =>
    parseAllowlist(values.API_URL_ALLOWLIST),
  );
  const keyring = named('TOKEN_ENCRYPTION_KEYS', () => parseKeyring(values.TOKEN_ENCRYPTION_KEYS));
  const extensionRedirectUrls = named('EXTENSION_REDIRECT_URLS', () =>
    list(values.EXTENSION_REDIRECT_URLS).map((url) => {
      const parsedUrl = URL.parse(url);
      if (parsedUrl === null || parsedUrl.href !== url || parsedUrl.protocol !== 'https:')
        throw new Error(`must be exact https URLs as identity.getRedirectURL() returns: ${url}`);
      return url;
    }),
  );
  const publicUrl = new URL(values.PUBLIC_URL);
  if (publicUrl.pathname !== '/' || publicUrl.search || publicUrl.hash)
    problems.push('PUBLIC_URL must be an origin, with no path, query or fragment');
  if (production) {
    if (publicUrl.protocol !== 'https:') problems.push('PUBLIC_URL must be https in production');
    if (apiUrlAllowlist?.some((entry) => entry.scheme !== 'https'))
      problems.push('API_URL_ALLOWLIST entries must be https in production');
  }
  if (production && values.TRUST_PROXY === 'true')
    problems.push(
      'TRUST_PROXY=true trusts any client to set X-Forwarded-For past the rate limits: give the number of proxies in front (1) or their addresses',
    );
  if (
    production &&
    values.METRICS_PORT !== undefined &&
    values.METRICS_TOKEN === undefined &&
    !LOOPBACK.test(values.HOST)
  )
    problems.push(
      `METRICS_PORT would serve /metrics to anyone who reaches ${values.HOST}: set METRICS_TOKEN, or bind HOST to loopback`,
    );
  if ((values.EVENTS_WEBHOOK_URL === undefined) !== (values.EVENTS_WEBHOOK_SECRET === undefined))
    problems.push('EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET go together: set both or neither');
  if (
    production &&
    values.EVENTS_WEBHOOK_URL !== undefined &&
    new URL(values.EVENTS_WEBHOOK_URL).protocol !== 'https:'
  )
    problems.push('EVENTS_WEBHOOK_URL must be https in production');
  const trustProblem = production ? implausibleTrust(values.TRUST_PROXY) : undefined;
  if (trustProblem !== undefined) problems.push(trustProblem);
  const redisLocations = REDIS_LOCATIONS.filter((name) => values[name] !== undefined);
  if (redisLocations.length > 1)
    problems.push(`${redisLocations.join(' and ')}: set only one of them`);
  const sentinel = named('REDIS_SENTINEL', () =>
    values.REDIS_SENTINEL === undefined ? undefined : parseSentinel(values.REDIS_SENTINEL),
  );
  const clusterNodes = named('REDIS_CLUSTER_NODES', () =>
    values.REDIS_CLUSTER_NODES === undefined
      ? undefined
      : parseClusterNodes(values.REDIS_CLUSTER_NODES),
  );
  const credentials = { username: values.REDIS_USERNAME, password: values.REDIS_PASSWORD };
  const redis: RedisTopology | undefined =
    values.REDIS_URL !== undefined
      ? { mode: 'standalone', url: values.REDIS_URL, ...credentials }
      : sentinel
        ? {
            mode: 'sentinel',
            ...sentinel,
            ...credentials,
            sentinelPassword: values.REDIS_SENTINEL_PASSWORD,
          }
        : clusterNodes
          ? { mode: 'cluster', nodes: clusterNodes, ...credentials }
          : undefined;
  const refreshLeaseMs = values.REFRESH_LEASE_MS ?? values.TOKEN_TIMEOUT_MS + 5000;
  if (refreshLeaseMs <= values.TOKEN_TIMEOUT_MS)
    problems.push('REFRESH_LEASE_MS must be longer than TOKEN_TIMEOUT_MS');
  if (problems.length > 0 || !apiUrlAllowlist || !keyring || !extensionRedirectUrls)
    throw new ConfigError(problems);

  return {
    production,
    developmentDefaults,
    authUrl: values.AUTH_URL.replace(/\/+$/, ''),
    clientId: values.CLIENT_ID,
    clientSecret: values.CLIENT_SECRET,
    publicUrl,
    redirectUri: new URL('/auth/callback', publicUrl).href,
    apiUrlAllowlist,
    extensionRedirectUrls,
    sessionSecrets: values.SESSION_SECRET,
    keyring,
    redis,
    redisCacheEntries: values.REDIS_CACHE_ENTRIES,
    redisWaitReplicas: values.REDIS_WAIT_REPLICAS ?? (redis?.mode === 'sentinel' ? 1 : 0),
    redisWaitTimeoutMs: values.REDIS_WAIT_TIMEOUT_MS,
    port: values.PORT,
    host: values.HOST,
    trustProxy: parseTrustProxy(values.TRUST_PROXY),
    logLevel: values.LOG_LEVEL,
    refreshAheadMs: values.REFRESH_AHEAD_SECONDS * 1000,
    refreshMinIntervalMs: values.REFRESH_MIN_INTERVAL_SECONDS * 1000,
    proxyTimeoutMs: values.PROXY_TIMEOUT_MS,
    proxyMaxAnswerBytes: values.PROXY_MAX_ANSWER_BYTES,
    tokenTimeoutMs: values.TOKEN_TIMEOUT_MS,
    refreshLeaseMs,
    shutdownDelayMs: values.SHUTDOWN_DELAY_MS,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    sessionLifetime: {
      idleMs: values.SESSION_IDLE_TIMEOUT * 1000,
      maxAgeMs: values.SESSION_MAX_AGE === undefined ? undefined : values.SESSION_MAX_AGE * 1000,
    },
    sessionFailureLimit: values.SESSION_FAILURE_LIMIT,
    sessionRateLimit: values.SESSION_RATE_LIMIT,
    metricsToken: values.METRICS_TOKEN,
    metricsPort: values.METRICS_PORT,
    eventsWebhook:
      values.EVENTS_WEBHOOK_URL !== undefined && values.EVENTS_WEBHOOK_SECRET !== undefined
        ? {
            url: values.EVENTS_WEBHOOK_URL,
            // Every event is signed with each: receivers move from one to the next at leisure.
            secrets: values.EVENTS_WEBHOOK_SECRET.split(',').map(
              (secret) => parseWebhookSecret(secret.trim()) as Buffer,
            ),
          }
        : undefined,
    traceTrustCallerSampling: values.TRACE_TRUST_CALLER_SAMPLING === 'true',
    eventLimits: {
      ...DEFAULT_EVENT_LIMITS,
      perSession: values.EVENTS_OUTBOX_MAX,
      backlog: values.EVENTS_BACKLOG_MAX,
      deadLetters: values.EVENTS_DEAD_LETTERS_MAX,
    },
  };
}

/** More proxies than any real deployment chains in front of one service. */
const MAX_PROXY_HOPS = 10;
/** Ranges wider than this are not a deployment's proxies (10.0.0.0/8 and the IPv6 unique local fc00::/7 are the widest private ones): they are most of the Internet. */
const NARROWEST_TRUST = { 4: 8, 6: 7 } as const;

/**
 * Why a TRUST_PROXY value would let clients choose their own address (past the rate limits), or
 * undefined: a hop count beyond any real chain of proxies, or a range no wider than a network's.
 */
function implausibleTrust(value: string | undefined): string | undefined {
  if (value === undefined || value === 'true' || value === 'false') return undefined;
  if (/^\d+$/.test(value))
    return Number(value) > MAX_PROXY_HOPS
      ? `TRUST_PROXY=${value} trusts more proxies than any deployment has: give the number in front (1 behind one load balancer), at most ${MAX_PROXY_HOPS}`
      : undefined;
  for (const entry of list(value)) {
    const match = /^(.+)\/(\d{1,3})$/.exec(entry);
    if (!match?.[1]) continue;
    const family = match[1].includes(':') ? 6 : 4;
    if (Number(match[2]) < NARROWEST_TRUST[family])
      return `TRUST_PROXY=${value} trusts ${entry}, a range wider than any network's proxies (IPv4 /${NARROWEST_TRUST[4]}, IPv6 /${NARROWEST_TRUST[6]} at the widest): name your proxies' addresses or subnets`;
  }
  return undefined;
}

/** Express's `trust proxy`: false by default; a hop count; or a list of addresses/subnets. */
function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}
