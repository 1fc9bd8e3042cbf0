import { readFileSync } from 'node:fs';
import { parseKeyring } from '../base/crypto.ts';
import { parseAllowlist } from '../oauth/allowlist.ts';
import { DEFAULT_EVENT_LIMITS } from '../base/defaults.ts';
import { parseWebhookSecret } from '../ops/events.ts';
import { parseClusterNodes, parseSentinel, type RedisTopology } from '../store/redis/clients.ts';
import { parseAdminTokens, type AdminTokenEntry } from './admin-tokens.ts';
import { refusals } from './refusals.ts';
import type { Config } from './types.ts';
import {
  DEV,
  DEV_REDIRECT_URLS,
  FILE_SECRETS,
  list,
  REDIS_LOCATIONS,
  REQUIRED_IN_PRODUCTION,
  schema,
  SECRETS,
  type Values,
} from './variables.ts';

export { CONFIG_VARIABLES, FILE_SECRETS } from './variables.ts';
export type { Config } from './types.ts';

/** Thrown with every problem named, so an operator fixes them all in one go. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Input = Record<string, string | undefined>;

/**
 * The broker's configuration from `env`, in stages: the secrets read from their files, the
 * production requirements or the development fallbacks, the schema, each concern's values, then
 * the refusals of what would quietly weaken a deployment. Every problem of every stage is named.
 */
export function loadConfig(env: Input): Config {
  const production = env.NODE_ENV === 'production';
  const problems: string[] = [];
  const input = withSecretFiles(withoutEmpty(env), problems);
  const developmentDefaults = production
    ? requireProduction(input, problems)
    : fallBackForDevelopment(input, problems);
  const values = parse(input, problems);
  const config = assemble(values, problems, { production, developmentDefaults });
  problems.push(...refusals(values, config, production));
  if (problems.length > 0 || config === undefined) throw new ConfigError(problems);
  return config;
}

/** An empty variable is an unset one (compose passes every variable through, empty when unset). */
function withoutEmpty(env: Input): Input {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
}

/** NAME_FILE holds a path, and the file's content (less a trailing newline) is NAME. Not both. */
function withSecretFiles(input: Input, problems: string[]): Input {
  const read: Input = { ...input };
  for (const name of FILE_SECRETS) {
    const path = input[`${name}_FILE`];
    if (path === undefined) continue;
    if (input[name] !== undefined) {
      problems.push(`${name} and ${name}_FILE are both set: set one of them`);
      continue;
    }
    try {
      read[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(
        `${name}_FILE names a file that cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${path}`,
      );
    }
  }
  return read;
}

/** NODE_ENV=production: the provider's and the broker's own settings, and a Redis. */
function requireProduction(input: Input, problems: string[]): string[] {
  for (const name of REQUIRED_IN_PRODUCTION)
    if (input[name] === undefined) problems.push(`${name} is required when NODE_ENV=production`);
  if (REDIS_LOCATIONS.every((name) => input[name] === undefined))
    problems.push(
      'REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required when NODE_ENV=production (the embedded store loses everything on restart and is not shared between instances)',
    );
  return [];
}

/**
 * Outside production, what is missing falls back to the development setup (the sandbox), and
 * the names of the fallbacks used are answered. The public secrets fall back together or not at
 * all.
 */
function fallBackForDevelopment(input: Input, problems: string[]): string[] {
  const given = SECRETS.filter((name) => input[name] !== undefined);
  if (given.length > 0 && given.length < SECRETS.length)
    for (const name of SECRETS.filter((secret) => input[secret] === undefined))
      problems.push(
        `${name} is required once ${given.join(' or ')} is set: the development fallbacks are public, and are used only when no secret is set`,
      );
  const fallbacks: Record<string, string> = {
    ...DEV,
    PUBLIC_URL: `http://127.0.0.1:${input.PORT ?? '8787'}`,
    EXTENSION_REDIRECT_URLS: DEV_REDIRECT_URLS,
  };
  const used: string[] = [];
  for (const [name, value] of Object.entries(fallbacks)) {
    if (input[name] !== undefined) continue;
    input[name] = value;
    used.push(name);
  }
  if (REDIS_LOCATIONS.every((name) => input[name] === undefined))
    used.push('REDIS_URL (embedded store)');
  return used;
}

/** The schema's verdict; its problems, named by variable, end loading at once. */
function parse(input: Input, problems: string[]): Values {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const name = issue.path.join('.');
    if (!problems.some((problem) => problem.startsWith(`${name} `)))
      problems.push(`${name} ${issue.message}`);
  }
  throw new ConfigError(problems);
}

/** The value `parse` gives, or undefined with the problem named after `name`. */
function named<T>(problems: string[], name: string, parse: () => T): T | undefined {
  try {
    return parse();
  } catch (error) {
    problems.push(`${name} ${(error as Error).message}`);
    return undefined;
  }
}

/** Each concern's values; undefined when one of them could not be parsed (its problem named). */
function assemble(
  values: Values,
  problems: string[],
  { production, developmentDefaults }: { production: boolean; developmentDefaults: string[] },
): Config | undefined {
  const apiUrlAllowlist = named(problems, 'API_URL_ALLOWLIST', () =>
    parseAllowlist(values.API_URL_ALLOWLIST),
  );
  const keyring = named(problems, 'TOKEN_ENCRYPTION_KEYS', () =>
    parseKeyring(values.TOKEN_ENCRYPTION_KEYS),
  );
  const extensionRedirectUrls = named(problems, 'EXTENSION_REDIRECT_URLS', () =>
    list(values.EXTENSION_REDIRECT_URLS).map((url) => {
      const parsedUrl = URL.parse(url);
      if (parsedUrl === null || parsedUrl.href !== url || parsedUrl.protocol !== 'https:')
        throw new Error(`must be exact https URLs as identity.getRedirectURL() returns: ${url}`);
      return url;
    }),
  );
  const topology = redisTopology(values, problems);
  const admin = adminApi(values, problems);
  if (!apiUrlAllowlist || !keyring || !extensionRedirectUrls || topology === null || admin === null)
    return undefined;
  const publicUrl = new URL(values.PUBLIC_URL);
  return {
    production,
    developmentDefaults,
    provider: {
      authUrl: values.AUTH_URL.replace(/\/+$/, ''),
      clientId: values.CLIENT_ID,
      clientSecret: values.CLIENT_SECRET,
      redirectUri: new URL('/auth/callback', publicUrl).href,
      apiUrlAllowlist,
    },
    publicUrl,
    extensionRedirectUrls,
    sessionSecrets: values.SESSION_SECRET,
    keyring,
    listen: { port: values.PORT, host: values.HOST, trustProxy: trustProxy(values.TRUST_PROXY) },
    logLevel: values.LOG_LEVEL,
    redis: {
      topology,
      cacheEntries: values.REDIS_CACHE_ENTRIES,
      waitReplicas: values.REDIS_WAIT_REPLICAS ?? (topology?.mode === 'sentinel' ? 1 : 0),
      waitTimeoutMs: values.REDIS_WAIT_TIMEOUT_MS,
    },
    refresh: {
      aheadMs: values.REFRESH_AHEAD_SECONDS * 1000,
      minIntervalMs: values.REFRESH_MIN_INTERVAL_SECONDS * 1000,
      tokenTimeoutMs: values.TOKEN_TIMEOUT_MS,
      leaseMs: values.REFRESH_LEASE_MS ?? values.TOKEN_TIMEOUT_MS + 5000,
    },
    proxy: {
      timeoutMs: values.PROXY_TIMEOUT_MS,
      maxAnswerBytes: values.PROXY_MAX_ANSWER_BYTES,
      tokenWaitMs: values.TOKEN_WAIT_MS,
    },
    sessions: {
      lifetime: {
        idleMs: values.SESSION_IDLE_TIMEOUT * 1000,
        maxAgeMs: values.SESSION_MAX_AGE === undefined ? undefined : values.SESSION_MAX_AGE * 1000,
      },
      failureLimit: values.SESSION_FAILURE_LIMIT,
      rateLimit: values.SESSION_RATE_LIMIT,
      signInLimit: values.AUTH_RATE_LIMIT,
    },
    shutdown: { delayMs: values.SHUTDOWN_DELAY_MS, timeoutMs: values.SHUTDOWN_TIMEOUT_MS },
    metrics: { token: values.METRICS_TOKEN, port: values.METRICS_PORT },
    admin,
    events: {
      webhook:
        values.EVENTS_WEBHOOK_URL !== undefined && values.EVENTS_WEBHOOK_SECRET !== undefined
          ? {
              url: values.EVENTS_WEBHOOK_URL,
              // Every event is signed with each: receivers move from one to the next at leisure.
              secrets: list(values.EVENTS_WEBHOOK_SECRET).map(
                (secret) => parseWebhookSecret(secret) as Buffer,
              ),
            }
          : undefined,
      limits: {
        ...DEFAULT_EVENT_LIMITS,
        perSession: values.EVENTS_OUTBOX_MAX,
        backlog: values.EVENTS_BACKLOG_MAX,
        deadLetters: values.EVENTS_DEAD_LETTERS_MAX,
      },
    },
    tracing: { trustCallerSampling: values.TRACE_TRUST_CALLER_SAMPLING === 'true' },
  };
}

/** Where the Redis is, or undefined (the embedded store); null when it cannot be told. */
function redisTopology(values: Values, problems: string[]): RedisTopology | undefined | null {
  const given = REDIS_LOCATIONS.filter((name) => values[name] !== undefined);
  if (given.length > 1) {
    problems.push(`${given.join(' and ')}: set only one of them`);
    return null;
  }
  const credentials = { username: values.REDIS_USERNAME, password: values.REDIS_PASSWORD };
  if (values.REDIS_URL !== undefined)
    return { mode: 'standalone', url: values.REDIS_URL, ...credentials };
  const { REDIS_SENTINEL, REDIS_CLUSTER_NODES } = values;
  if (REDIS_SENTINEL !== undefined) {
    const sentinel = named(problems, 'REDIS_SENTINEL', () => parseSentinel(REDIS_SENTINEL));
    return sentinel
      ? {
          mode: 'sentinel',
          ...sentinel,
          ...credentials,
          sentinelPassword: values.REDIS_SENTINEL_PASSWORD,
        }
      : null;
  }
  if (REDIS_CLUSTER_NODES !== undefined) {
    const nodes = named(problems, 'REDIS_CLUSTER_NODES', () =>
      parseClusterNodes(REDIS_CLUSTER_NODES),
    );
    return nodes ? { mode: 'cluster', nodes, ...credentials } : null;
  }
  return undefined;
}

/**
 * The admin API's port and tokens when ADMIN_PORT is set (undefined: off); null when they cannot be
 * had, the problem named. The tokens file is read here: a broker that cannot use it does not start
 * (http/admin/tokens.ts reads it again when it changes).
 */
function adminApi(
  values: Values,
  problems: string[],
): { port: number; tokensFile: string; tokens: AdminTokenEntry[] } | undefined | null {
  const { ADMIN_PORT: port, ADMIN_TOKENS_FILE: path } = values;
  if (port === undefined) return undefined;
  if (path === undefined) {
    problems.push(
      'ADMIN_TOKENS_FILE is required when ADMIN_PORT is set: the admin API takes only the tokens it lists (docs/admin-api.md)',
    );
    return null;
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    problems.push(
      `ADMIN_TOKENS_FILE names a file that cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): ${path}`,
    );
    return null;
  }
  const tokens = named(problems, `ADMIN_TOKENS_FILE (${path})`, () => parseAdminTokens(text));
  return tokens === undefined ? null : { port, tokensFile: path, tokens };
}

/** Express's `trust proxy`: false by default; a hop count; or a list of addresses/subnets. */
function trustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}
