import { DEV_EXTENSION_REDIRECT_URLS } from '@baton/shared';
import { z } from 'zod';
import {
  DEFAULT_EVENT_LIMITS,
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_SESSION_LIFETIME,
} from '../base/defaults.ts';
import { parseWebhookSecret } from '../ops/events.ts';

/**
 * Every variable the broker reads, as one zod schema: what each must look like and its default.
 * config.ts turns the values into a Config; docs/operations.md and server/.env.example list them,
 * kept in step by config-docs.test.ts.
 */
/** The development setup's fallbacks (public, in this repository): the provider sandbox. */
export const DEV = {
  AUTH_URL: 'http://127.0.0.1:8788',
  CLIENT_ID: 'baton-dev',
  CLIENT_SECRET: 'sbx_secret_baton-development-only-0123456789abcdef',
  API_URL_ALLOWLIST: 'http://127.0.0.1:8788',
  SESSION_SECRET: 'development-only-session-secret-do-not-deploy',
  TOKEN_ENCRYPTION_KEYS: 'dev:YmF0b24tZGV2ZWxvcG1lbnQtb25seS1rZXktMDAwMDA=',
} as const;

export const list = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0);

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

export const schema = z.object({
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
  TOKEN_WAIT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
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
    .default(DEFAULT_SESSION_LIFETIME.idleMs / 1000),
  SESSION_MAX_AGE: z.coerce
    .number()
    .int()
    .min(3600)
    .max(10 * 365 * 24 * 3600)
    .optional(),
  SESSION_FAILURE_LIMIT: z.coerce.number().int().min(1).max(100_000).default(30),
  SESSION_RATE_LIMIT: z.coerce.number().int().min(0).max(10_000_000).default(600),
  AUTH_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(60),
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  ADMIN_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  ADMIN_TOKENS_FILE: z.string().min(1).optional(),
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

export const REQUIRED_IN_PRODUCTION = [
  'AUTH_URL',
  'CLIENT_ID',
  'CLIENT_SECRET',
  'PUBLIC_URL',
  'API_URL_ALLOWLIST',
  'EXTENSION_REDIRECT_URLS',
  'SESSION_SECRET',
  'TOKEN_ENCRYPTION_KEYS',
] as const;

export const REDIS_LOCATIONS = ['REDIS_URL', 'REDIS_SENTINEL', 'REDIS_CLUSTER_NODES'] as const;

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
export const SECRETS = ['CLIENT_SECRET', 'SESSION_SECRET', 'TOKEN_ENCRYPTION_KEYS'] as const;

/** The variables as parsed. */
export type Values = z.infer<typeof schema>;

/** The development setup's redirect URLs: the built extension's, from shared/. */
export const DEV_REDIRECT_URLS = DEV_EXTENSION_REDIRECT_URLS.join(',');
