/**
 * The admin API's contract as zod schemas: what each parameter must look like (the routes validate
 * with them) and what each answer holds (the routes pass every answer through them, so a field the
 * use cases add by mistake never reaches the wire). server/scripts/admin-openapi.ts writes
 * docs/admin-openapi.json from the same schemas. The answers match admin/types.ts.
 */
import { z } from 'zod';
import type {
  ActionResult,
  Actor,
  CensusJob,
  ConnectionView,
  DeadLetterView,
  Overview,
  ReencryptJob,
} from '../../admin/types.ts';
import type { DeadLetterReason } from '../../ops/outbox-heads.ts';
import { ADMIN_ERROR_CODES } from './errors.ts';

// --- Parameters --------------------------------------------------------------------------------

/** The broker makes them as 16 random bytes in base64url (22 characters); older ones may differ. */
export const connectionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a connection id: 1 to 64 letters, digits, - or _')
  .meta({ description: 'A connection id, as logs, events and the extension name it.' });

/** ops/events.ts makes them `msg_` and 16 random bytes in base64url. */
export const eventIdSchema = z
  .string()
  .regex(/^msg_[A-Za-z0-9_-]{22}$/, 'must be an event id: msg_ and 22 letters, digits, - or _')
  .meta({
    description: "An event's id (`msg_…`), as its webhook-id header and the dead letters say.",
  });

/** ops/events.ts sessionRef: `ses_` and 22 base64url characters of a hash of the session id. */
export const sessionRefSchema = z
  .string()
  .regex(
    /^ses_[A-Za-z0-9_-]{22}$/,
    'must be a session reference: ses_ and 22 letters, digits, - or _',
  )
  .meta({ description: 'A session reference (`ses_…`), as logs and events name the session.' });

export const MAX_LICENCE_LENGTH = 2048;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A licence's api_url: an absolute https URL (http only on loopback, as a development broker's
 * allowlist may hold the sandbox), with no credentials, query or fragment.
 */
export function isLicenceUrl(value: string): boolean {
  const url = URL.parse(value);
  if (url === null || url.username || url.password || url.search || url.hash) return false;
  if (value.includes('?') || value.includes('#')) return false;
  return (
    url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))
  );
}

export const licenceSchema = z
  .string()
  .max(MAX_LICENCE_LENGTH, `must be at most ${MAX_LICENCE_LENGTH} characters`)
  .refine(isLicenceUrl, {
    error:
      'must be a licence api_url: an absolute https URL (http only for localhost and 127.0.0.1), without credentials, query or fragment',
  })
  .meta({ description: "A licence: its `api_url`, as the provider's callback gave it." });

export const MAX_LIMIT = 500;
export const DEFAULT_LIMIT = 100;
/** A page size, 1 to 500, written plainly (no sign, exponent, fraction or leading zero). */
export const limitSchema = z
  .string()
  .regex(/^(?:[1-9][0-9]?|[1-4][0-9]{2}|500)$/, `must be an integer from 1 to ${MAX_LIMIT}`)
  .transform(Number)
  .meta({ description: `At most this many (1 to ${MAX_LIMIT}; default ${DEFAULT_LIMIT}).` });

export const DEAD_LETTER_REASONS = [
  'expired',
  'outbox_full',
  'backlog_full',
] as const satisfies readonly DeadLetterReason[];
export const deadLetterReasonSchema = z.enum(DEAD_LETTER_REASONS).meta({
  description:
    'Why an event was set aside: expired (undelivered 24 h after it was recorded), outbox_full (past EVENTS_OUTBOX_MAX in its session), backlog_full (past EVENTS_BACKLOG_MAX in all).',
});

/** GET /connections: exactly one of connection, session and licence (checked by the route). */
export const connectionsQuerySchema = z.strictObject({
  connection: connectionIdSchema.optional(),
  session: sessionRefSchema.optional(),
  licence: licenceSchema.optional(),
  limit: limitSchema.optional(),
});

export const deadLettersQuerySchema = z.strictObject({
  limit: limitSchema.optional(),
  reason: deadLetterReasonSchema.optional(),
});

export const endSessionsBodySchema = z.strictObject({ licence: licenceSchema });

// --- Answers -----------------------------------------------------------------------------------

const count = z.number().int().min(0);
const counts = z.record(z.string(), count);
const time = z.iso.datetime().meta({ description: 'ISO 8601, UTC.' });
const jobState = z.enum(['idle', 'running', 'paused', 'done', 'failed']);

export const actorSchema = z
  .object({ name: z.string(), role: z.enum(['viewer', 'operator']) })
  .meta({ id: 'Actor' }) satisfies z.ZodType<Actor>;

export const overviewSchema = z
  .object({
    build: z.object({ version: z.string(), revision: z.string() }),
    dataFormat: z.number().int().meta({ description: 'The data format the store holds.' }),
    redis: z.object({
      topology: z.enum(['embedded', 'standalone', 'sentinel', 'cluster']),
      masters: z.array(
        z.object({
          address: z.string().meta({ description: 'host:port, no credentials.' }),
          up: z.boolean(),
          latencyMs: z.number().min(0).nullable(),
        }),
      ),
    }),
    sessions: count.nullable().meta({
      description:
        'Sessions in the store, as counted at census.takenAt: now on the embedded store, else by the last census (GET /jobs/census); null when no census is kept.',
    }),
    connections: z.object({
      byStatus: z
        .object({ connected: count, disconnected: count })
        .meta({ description: 'From the connections index: live.' }),
      byKeyId: counts.nullable().meta({
        description: 'Records by encryption key id, counted with `sessions` (null as it).',
      }),
      activeKeyId: z.string(),
    }),
    census: z.object({
      takenAt: time.nullable().meta({
        description:
          'When `sessions` and `connections.byKeyId` were counted: now for a direct count, else when the last census finished; null: no census kept (kept 7 days).',
      }),
      state: jobState.meta({ description: "The census job's state: running while it counts." }),
    }),
    refreshes: z
      .object({ refreshed: count, rejected: count, transient: count, lost: count })
      .meta({ description: 'Refresh outcomes over the last hour, across every instance.' }),
    events: z.object({
      enabled: z.boolean(),
      waiting: count,
      sessionsDue: count,
      deadLetters: count,
      deadLettersByReason: counts,
    }),
  })
  .meta({ id: 'Overview' }) satisfies z.ZodType<Overview>;

export const connectionViewSchema = z
  .object({
    id: z.string(),
    sessionRef: z.string(),
    licence: z.string().meta({ description: "The licence's api_url." }),
    status: z.enum(['connected', 'disconnected']),
    createdAt: time,
    lastRefreshAt: time.nullable(),
    lastRefreshOutcome: z.enum(['ok', 'rejected', 'lost', 'transient']).nullable(),
    disconnectedReason: z.string().nullable(),
    lastUsedAt: time.meta({ description: 'Last use of its session, to the hour.' }),
    keyId: z.string().meta({ description: 'The encryption key id its record is sealed under.' }),
  })
  .meta({ id: 'ConnectionView' }) satisfies z.ZodType<ConnectionView>;

export const connectionsAnswerSchema = z
  .object({ connections: z.array(connectionViewSchema) })
  .meta({ id: 'Connections' });

export const deadLetterViewSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    sessionRef: z.string().nullable(),
    reason: z.string(),
    attempts: count,
    recordedAt: time.nullable(),
    deadAt: time,
    lastOutcome: z.string().nullable(),
  })
  .meta({ id: 'DeadLetterView' }) satisfies z.ZodType<DeadLetterView>;

export const deadLettersAnswerSchema = z
  .object({ deadLetters: z.array(deadLetterViewSchema) })
  .meta({ id: 'DeadLetters' });

export const reencryptJobSchema = z
  .object({
    state: jobState,
    activeKeyId: z.string(),
    startedAt: time.nullable(),
    finishedAt: time.nullable(),
    startedBy: z.string().nullable(),
    seen: count,
    resealed: count,
    alreadyCurrent: count,
    missingKey: counts.meta({
      description: 'Records sealed under a key id no longer in TOKEN_ENCRYPTION_KEYS, by key id.',
    }),
    error: z.string().nullable(),
  })
  .meta({ id: 'ReencryptJob' }) satisfies z.ZodType<ReencryptJob>;

export const censusJobSchema = z
  .object({
    state: jobState,
    startedAt: time.nullable(),
    finishedAt: time.nullable(),
    startedBy: z.string().nullable(),
    sessions: count.meta({ description: 'Sessions counted so far by this run.' }),
    connections: count.meta({ description: 'Connection records counted so far by this run.' }),
    byKeyId: counts.meta({ description: 'The records counted, by encryption key id.' }),
    byStatus: z
      .object({ connected: count, disconnected: count })
      .meta({ description: 'The records counted, by status (those that could be opened).' }),
    unreadable: count.meta({
      description: 'Records that could not be opened (under a key no longer configured).',
    }),
    error: z.string().nullable(),
  })
  .meta({ id: 'CensusJob' }) satisfies z.ZodType<CensusJob>;

export const actionResultSchema = z
  .object({
    ok: z.boolean(),
    count: count.meta({ description: 'Connections disconnected, sessions ended, letters moved…' }),
    error: z.literal('not_found').exactOptional(),
  })
  .meta({ id: 'ActionResult' }) satisfies z.ZodType<ActionResult>;

export const sweepAnswerSchema = z
  .object({ ok: z.boolean(), outboxes: count })
  .meta({ id: 'SweepResult' });

export const adminErrorBodySchema = z
  .object({ error: z.enum(ADMIN_ERROR_CODES), message: z.string() })
  .meta({ id: 'AdminError' });

// --- The answers are admin/types.ts's, exactly ----------------------------------------------------

/** true when A and B are the same type (each assignable to the other). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Fails to compile when a schema's answer drifts from the contract it stands for. */
export type SchemasMatchContract = [
  Same<z.output<typeof actorSchema>, Actor>,
  Same<z.output<typeof overviewSchema>, Overview>,
  Same<z.output<typeof connectionViewSchema>, ConnectionView>,
  Same<z.output<typeof deadLetterViewSchema>, DeadLetterView>,
  Same<z.output<typeof reencryptJobSchema>, ReencryptJob>,
  Same<z.output<typeof censusJobSchema>, CensusJob>,
  Same<z.output<typeof actionResultSchema>, ActionResult>,
] extends true[]
  ? true
  : never;
export const schemasMatchContract: SchemasMatchContract = true;
