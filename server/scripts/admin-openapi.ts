/**
 * docs/admin-openapi.json: the admin API (ADMIN_PORT) as an OpenAPI 3.1 document, generated from
 * the zod schemas its routes validate and answer with (server/src/http/admin/schemas.ts), never
 * written by hand. `pnpm --filter @baton/server admin-openapi` writes it; admin-openapi.test.ts
 * fails when the file is not what this produces now, and test/integration/openapi-lint.test.ts
 * holds it to Redocly's recommended rules, as the public document.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';
import manifest from '../package.json' with { type: 'json' };
import { DEFAULT_ADMIN_FAILURES_PER_MINUTE } from '../src/http/admin/auth.ts';
import { ADMIN_ERROR_STATUS, ADMIN_REALM, type AdminErrorCode } from '../src/http/admin/errors.ts';
import { ADMIN_API_BASE, ADMIN_ROUTES } from '../src/http/admin/routes.ts';
import {
  actionResultSchema,
  actorSchema,
  adminErrorBodySchema,
  censusJobSchema,
  connectionIdSchema,
  connectionsAnswerSchema,
  connectionsQuerySchema,
  deadLettersAnswerSchema,
  deadLettersQuerySchema,
  endSessionsBodySchema,
  eventIdSchema,
  overviewSchema,
  reencryptJobSchema,
  sessionRefSchema,
  sweepAnswerSchema,
} from '../src/http/admin/schemas.ts';

export const ADMIN_OPENAPI_PATH = fileURLToPath(
  new URL('../../docs/admin-openapi.json', import.meta.url),
);

/** An Express path (`/connections/:id/disconnect`) as an OpenAPI one, below /api/v1. */
const path = (route: string): string => `${ADMIN_API_BASE}${route.replace(/:(\w+)/g, '{$1}')}`;

const noStore = z.literal('no-store').meta({ description: 'Never kept by a cache.' });
const retryAfter = z
  .string()
  .regex(/^[0-9]+$/)
  .meta({ description: 'Seconds to wait before asking again.' });
const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

const WHY: Record<Exclude<AdminErrorCode, 'server_error'>, string> = {
  invalid_request:
    'A parameter or the body is not valid: the message says which, and what it must be.',
  unauthenticated: 'No token, or not one ADMIN_TOKENS_FILE lists.',
  forbidden: "A viewer's token asking an operator action.",
  not_found: 'Nothing found to act on (it may be gone already).',
  too_many_attempts: `Too many failed authentications from this client address (${DEFAULT_ADMIN_FAILURES_PER_MINUTE} a minute); even a right token waits for Retry-After.`,
  upstream_unavailable: 'The broker cannot reach its store.',
};

function errorResponse(code: AdminErrorCode): ZodOpenApiResponseObject {
  const status = ADMIN_ERROR_STATUS[code];
  return {
    description: code === 'server_error' ? 'An unexpected failure (logged, not shown).' : WHY[code],
    headers: z.object({
      'Cache-Control': noStore,
      ...(status === 429 || status === 503 ? { 'Retry-After': retryAfter } : {}),
      ...(status === 401
        ? {
            'WWW-Authenticate': z
              .literal(`Bearer realm="${ADMIN_REALM}"`)
              .meta({ description: 'The challenge: a Bearer token.' }),
          }
        : {}),
    }),
    content: json(adminErrorBodySchema.extend({ error: z.literal(code) })),
  };
}

/** Every operation of /api: authentication, its limit, the store, an unexpected failure. */
const ALWAYS: AdminErrorCode[] = [
  'unauthenticated',
  'too_many_attempts',
  'server_error',
  'upstream_unavailable',
];

function errors(codes: AdminErrorCode[]): ZodOpenApiResponsesObject {
  const all = [...new Set([...codes, ...ALWAYS])].sort(
    (a, b) => ADMIN_ERROR_STATUS[a] - ADMIN_ERROR_STATUS[b],
  );
  return Object.fromEntries(
    all.map((code) => [`${ADMIN_ERROR_STATUS[code]}`, errorResponse(code)]),
  ) as ZodOpenApiResponsesObject;
}

const security = [{ adminToken: [] }];
const ok = (description: string, schema: z.ZodType): ZodOpenApiResponseObject => ({
  description,
  headers: z.object({ 'Cache-Control': noStore }),
  content: json(schema),
});

/** An operator's action: 403 for a viewer, 404 when there is nothing to act on. */
function action(
  operationId: string,
  summary: string,
  description: string,
  params: Pick<ZodOpenApiOperationObject, 'requestParams' | 'requestBody'>,
): ZodOpenApiOperationObject {
  return {
    operationId,
    tags: ['actions'],
    summary,
    description: `${description} Operators only. Recorded as an \`admin.action\` event naming the actor and the target.`,
    security,
    ...params,
    responses: {
      200: ok('Done: how many things it changed.', actionResultSchema),
      ...errors(['invalid_request', 'forbidden', 'not_found']),
    },
  };
}

const read = (
  operationId: string,
  summary: string,
  schema: z.ZodType,
  extra: Partial<ZodOpenApiOperationObject> = {},
  bad: AdminErrorCode[] = [],
): ZodOpenApiOperationObject => ({
  operationId,
  tags: ['reads'],
  summary,
  security,
  ...extra,
  responses: { 200: ok('The answer.', schema), ...errors(bad) },
});

const consolePage = (
  operationId: string,
  summary: string,
  type: string,
): ZodOpenApiOperationObject => ({
  operationId,
  tags: ['console'],
  summary,
  description:
    'No token needed: the console holds no data, it calls /api/v1 with the token the operator enters. Served with a strict Content-Security-Policy of its own.',
  security: [],
  responses: {
    200: {
      description: 'The file.',
      headers: z.object({ 'Cache-Control': noStore }),
      content: { [type]: { schema: z.string() } },
    },
    404: {
      description: 'Any path or method this document does not list.',
      content: json(adminErrorBodySchema.extend({ error: z.literal('not_found') })),
    },
  },
});

const R = ADMIN_ROUTES;

const DESCRIPTION = `The admin API of a Baton broker, on a listener of its own (ADMIN_PORT; never the public port, which answers 404 on every path here). Generated from the zod schemas of server/src/http/admin/schemas.ts by server/scripts/admin-openapi.ts (\`pnpm --filter @baton/server admin-openapi\`); do not edit by hand. The operators' guide is docs/admin-api.md.

Every call under ${ADMIN_API_BASE} takes \`Authorization: Bearer <token>\`, a token ADMIN_TOKENS_FILE lists by its SHA-256, with a role: \`viewer\` (reads) or \`operator\` (reads and actions). Every error is JSON \`{ error, message }\` (components.schemas.AdminError) with one status per code: ${Object.entries(
  ADMIN_ERROR_STATUS,
)
  .map(([code, status]) => `\`${code}\` ${status}`)
  .join(', ')}. Every answer carries \`Cache-Control: no-store\`.

Paths match exactly, in their case and without a trailing slash; HEAD and OPTIONS are not answered (404), and any path or method not listed answers 404 \`not_found\`. A parameter not listed, or given twice, is refused (400).`;

export function adminOpenApiDocument(): ReturnType<typeof createDocument> {
  const document: ZodOpenApiObject = {
    openapi: '3.1.1',
    info: {
      title: 'Baton broker: admin API',
      version: manifest.version,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      {
        url: '{admin}',
        description: "A broker's admin listener.",
        variables: {
          admin: {
            default: 'http://127.0.0.1:9465',
            description:
              'The admin listener: http://HOST:ADMIN_PORT, or its Service in Kubernetes.',
          },
        },
      },
    ],
    security,
    tags: [
      { name: 'reads', description: 'What viewers and operators may read.' },
      { name: 'actions', description: 'What only operators may do.' },
      { name: 'console', description: 'The console page and its assets.' },
    ],
    paths: {
      '/': { get: consolePage('consolePage', 'The console (HTML)', 'text/html') },
      '/console.js': {
        get: consolePage('consoleScript', "The console's script", 'text/javascript'),
      },
      '/console/{module}': {
        get: {
          ...consolePage('consoleModule', "A module of the console's script", 'text/javascript'),
          requestParams: {
            path: z.object({
              module: z
                .string()
                .regex(/^[a-z0-9-]+\.js$/)
                .meta({ description: 'A module the console script imports (`api.js`, say).' }),
            }),
          },
        },
      },
      '/console.css': { get: consolePage('consoleStyle', "The console's style sheet", 'text/css') },
      [path(R.whoami)]: {
        get: read('whoami', 'Who the token is: its name and role', actorSchema),
      },
      [path(R.overview)]: {
        get: read(
          'overview',
          'The state of the broker: build, data format, Redis and each master, sessions, connections, refreshes, events',
          overviewSchema,
        ),
      },
      [path(R.connections)]: {
        get: read(
          'findConnections',
          'Find connections by connection id, by session reference or by licence (exactly one)',
          connectionsAnswerSchema,
          { requestParams: { query: connectionsQuerySchema } },
          ['invalid_request'],
        ),
      },
      [path(R.disconnect)]: {
        post: action(
          'disconnect',
          'Disconnect a connection',
          'Marks it disconnected (reason `disconnected_by_operator`): the user is asked to reconnect.',
          { requestParams: { path: z.object({ id: connectionIdSchema }) } },
        ),
      },
      [path(R.endSession)]: {
        post: action(
          'endSession',
          'End a session',
          'Ends the session and removes its connections: the extension signs in again.',
          { requestParams: { path: z.object({ ref: sessionRefSchema }) } },
        ),
      },
      [path(R.endLicenceSessions)]: {
        post: action(
          'endSessionsOfLicence',
          'End every session that holds a licence',
          'Each session holding a connection to this api_url is ended.',
          { requestBody: { required: true, content: json(endSessionsBodySchema) } },
        ),
      },
      [path(R.deadLetters)]: {
        get: read(
          'deadLetters',
          'Dead letters, newest first',
          deadLettersAnswerSchema,
          { requestParams: { query: deadLettersQuerySchema } },
          ['invalid_request'],
        ),
      },
      [path(R.redeliver)]: {
        post: action(
          'redeliver',
          'Redeliver a dead letter',
          'Puts the event back in its outbox, for delivery again.',
          { requestParams: { path: z.object({ id: eventIdSchema }) } },
        ),
      },
      [path(R.deadLetter)]: {
        delete: action('discard', 'Discard a dead letter', 'Deletes it for good.', {
          requestParams: { path: z.object({ id: eventIdSchema }) },
        }),
      },
      [path(R.reencrypt)]: {
        get: read('reencryptJob', 'The re-encryption job and its progress', reencryptJobSchema),
        post: {
          operationId: 'startReencrypt',
          tags: ['actions'],
          summary: 'Re-encrypt every connection record under the active key',
          description:
            'Starts the job, or resumes one paused or left by a stopped instance; it runs in the background: follow it with GET. Operators only; recorded as an `admin.action` event.',
          security,
          responses: {
            202: { ...ok('Started (or resumed).', reencryptJobSchema) },
            ...errors(['forbidden']),
          },
        },
      },
      [path(R.census)]: {
        get: read('censusJob', 'The census and its progress', censusJobSchema),
        post: {
          operationId: 'startCensus',
          tags: ['actions'],
          summary: 'Count the sessions and connection records (a walk of every master)',
          description:
            "Starts a census, or resumes one paused or left by a stopped instance; it runs in the background: follow it with GET. Once done, the overview's `sessions` and `connections.byKeyId` are its figures, dated by `census.takenAt`. Operators only; recorded as an `admin.action` event.",
          security,
          responses: {
            202: { ...ok('Started (or resumed).', censusJobSchema) },
            ...errors(['forbidden']),
          },
        },
      },
      [path(R.sweep)]: {
        post: {
          operationId: 'sweepEvents',
          tags: ['actions'],
          summary: 'Schedule every outbox found in Redis for delivery',
          description:
            'A walk of the keyspace, for outboxes an instance that died left unscheduled. Operators only; recorded as an `admin.action` event.',
          security,
          responses: {
            200: ok('How many outboxes it found.', sweepAnswerSchema),
            ...errors(['forbidden']),
          },
        },
      },
    },
    components: {
      securitySchemes: {
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            "An admin token (`batadm_…`, made by the CLI's `token` command); ADMIN_TOKENS_FILE lists its SHA-256, its name and its role. In the Authorization header only, never in a URL.",
        },
      },
      schemas: { AdminError: adminErrorBodySchema },
    },
    'x-baton-lint-exceptions': [
      {
        rule: 'no-unused-components',
        at: ['#/components/schemas/AdminError'],
        reason:
          "Named for readers and generated clients' types: each error answer narrows AdminError's `error` to its one code.",
      },
    ],
  };
  return createDocument(document);
}

/** The document as docs/admin-openapi.json holds it: formatted by the repository's settings. */
export async function renderAdminOpenApi(): Promise<string> {
  const options = await resolveConfig(ADMIN_OPENAPI_PATH);
  return format(JSON.stringify(adminOpenApiDocument(), null, 2), {
    ...options,
    filepath: ADMIN_OPENAPI_PATH,
  });
}

if (import.meta.main) {
  await writeFile(ADMIN_OPENAPI_PATH, await renderAdminOpenApi());
  console.log(`wrote ${ADMIN_OPENAPI_PATH}`);
}
