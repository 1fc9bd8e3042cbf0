/**
 * docs/openapi.json: the broker's routes as an OpenAPI 3.1 document, generated from the zod
 * schemas of @baton/shared (zod-openapi, over zod's own JSON Schema output), never written by hand.
 * `pnpm --filter @baton/server openapi` writes it; openapi.test.ts fails when the file is not what
 * this produces now, and the integration suite checks every answer the broker gives its tests
 * against it (test/support/contract.ts).
 *
 * Three conventions the document states in its own words (`x-baton-*`), for the contract checker,
 * the lint and readers: `x-baton-pass-through` marks the API routes, whose answers without
 * `Baton-Error` are the license API's; `x-baton-rest-of-path` names the path parameter that spans
 * the rest of the path, slashes included; `x-baton-lint-exceptions` lists where the document
 * departs from Redocly's recommended rules, and why (test/integration/openapi-lint.test.ts). Any
 * path or method not listed answers `components.responses.UnknownRoute`.
 */
import {
  AUTH_REDIRECT_ERRORS,
  authStartQuerySchema,
  BROKER_ERROR_HEADER,
  connectionsResponseSchema,
  ERROR_STATUS,
  errorBodySchema,
  healthResponseSchema,
  PROXY_ANSWER_HEADERS,
  PROXY_METHODS,
  readinessResponseSchema,
  redirectCheckResponseSchema,
  routes,
  sessionCreateRequestSchema,
  sessionCreateResponseSchema,
  type ErrorCode,
} from '@baton/shared';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathItemObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';
import manifest from '../package.json' with { type: 'json' };
import { FORWARDED_REQUEST_HEADERS } from '../src/connections/proxy.ts';

/** Where the document lives, from the repository's root. */
export const OPENAPI_PATH = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

/** A route of @baton/shared as an OpenAPI path template (`routes.connection('{id}')`). */
const templated = (path: string): string => path.replace(/%7B(\w+)%7D/g, '{$1}');

const errorCode = errorBodySchema.shape.error;
type Codes = [ErrorCode, ...ErrorCode[]];

const noStore = z.literal('no-store').meta({ description: 'Never kept by a cache.' });
const retryAfter = z
  .string()
  .regex(/^[0-9]+$/)
  .meta({ description: 'Seconds to wait before asking again.' });
/** express-rate-limit's headers (draft 8 of the IETF's RateLimit header fields). */
const rateLimitHeaders = {
  RateLimit: z
    .string()
    .optional()
    .meta({ description: "What is left of this client address's budget." }),
  'RateLimit-Policy': z
    .string()
    .optional()
    .meta({ description: 'The budget: requests per minute per client address.' }),
};

/**
 * The broker's own errors that a route can answer, one response per status (each code's status is
 * ERROR_STATUS's). `pages`: statuses at which the route may answer an HTML page instead (the
 * authorization window's), with what the page says.
 */
function brokerErrors(
  codes: readonly ErrorCode[],
  pages: Partial<Record<400 | 500 | 503, string>> = {},
): ZodOpenApiResponsesObject {
  const statuses = new Set([
    ...codes.map((code) => ERROR_STATUS[code]),
    ...Object.keys(pages).map(Number),
  ]);
  const responses: Record<`${4 | 5}${string}`, ZodOpenApiResponseObject> = {};
  for (const status of [...statuses].sort((a, b) => a - b)) {
    const ofStatus = codes.filter((code) => ERROR_STATUS[code] === status);
    const page = pages[status as keyof typeof pages];
    responses[`${status}` as `${4 | 5}${string}`] = errorResponse(status, ofStatus, page);
  }
  return responses;
}

function errorResponse(
  status: number,
  codes: ErrorCode[],
  page: string | undefined,
): ZodOpenApiResponseObject {
  const retry = status === 429 || status === 503 ? { 'Retry-After': retryAfter } : {};
  const html = { 'text/html': { schema: z.string() } };
  const [first, ...rest] = codes;
  if (first === undefined) {
    return {
      description: `A page (no ${BROKER_ERROR_HEADER}): ${page ?? 'the route failed.'}`,
      headers: z.object({ 'Cache-Control': noStore, ...retry }),
      content: html,
    };
  }
  const these = errorCode.extract([first, ...rest] satisfies Codes);
  const named = codes.map((code) => `\`${code}\``).join(' or ');
  const mark = these.meta({
    description:
      page === undefined
        ? "The broker's own error: its code, the body's `error`."
        : "The broker's own error, on a JSON answer: its code, the body's `error`. A page has none.",
  });
  return {
    description:
      page === undefined
        ? `The broker's own error: ${named}.`
        : `The broker's own error (${named}), when the request failed before the route; or a page (no ${BROKER_ERROR_HEADER}): ${page}`,
    headers: z.object({
      [BROKER_ERROR_HEADER]: page === undefined ? mark : mark.optional(),
      'Cache-Control': noStore,
      ...retry,
    }),
    content: {
      'application/json': { schema: errorBodySchema.extend({ error: these }) },
      ...(page === undefined ? {} : html),
    },
  };
}

/** Every route that reads the store may find it down (503) or fail unexpectedly (500). */
const STORE: ErrorCode[] = ['upstream_unavailable', 'server_error'];
/** The bearer routes' session check: no session, or too many calls or failed checks. */
const SESSION: ErrorCode[] = ['invalid_session', 'rate_limited'];
const PAGE_FAILED = {
  500: 'the broker could not complete the sign-in.',
  503: 'the broker cannot reach its store.',
} as const;

const bearer = [{ session: [] }];
const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/** A 302 of the authorization window: Express's redirect, with a short text or HTML body. */
function redirect(description: string, setsCookie: boolean): ZodOpenApiResponseObject {
  return {
    description,
    headers: z.object({
      Location: z.url().meta({ description: 'Where the window goes next.' }),
      'Cache-Control': noStore,
      ...(setsCookie
        ? {
            'Set-Cookie': z
              .string()
              .meta({ description: "The authorization window's session cookie (authCookie)." }),
          }
        : {}),
      ...rateLimitHeaders,
    }),
    content: { 'text/plain': { schema: z.string() }, 'text/html': { schema: z.string() } },
  };
}

const health: ZodOpenApiOperationObject = {
  operationId: 'health',
  tags: ['operations'],
  summary: 'Liveness: the process answers',
  description: 'Says nothing of the store: use /readyz for that.',
  security: [],
  responses: { 200: { description: 'Up.', content: json(healthResponseSchema) } },
};

const readiness: ZodOpenApiOperationObject = {
  operationId: 'readiness',
  tags: ['operations'],
  summary: 'Readiness: whether to send this instance traffic',
  security: [],
  responses: {
    200: {
      description: 'Ready: the store answers.',
      content: json(
        readinessResponseSchema.extend({
          status: readinessResponseSchema.shape.status.extract(['ready']),
        }),
      ),
    },
    503: {
      description: `Not ready, and why: shutting down, a stored record needs an encryption key this broker lacks, or the store does not answer. Not an error of the broker's: no ${BROKER_ERROR_HEADER}, no Retry-After.`,
      content: json(
        readinessResponseSchema.extend({
          status: readinessResponseSchema.shape.status.exclude(['ready']),
        }),
      ),
    },
  },
};

const metricsScrape: ZodOpenApiOperationObject = {
  operationId: 'metrics',
  tags: ['operations'],
  summary: 'Prometheus metrics',
  description:
    'Served on this listener only when METRICS_TOKEN is set (METRICS_PORT serves it on a port of its own instead); without it, an unknown route.',
  security: [{ metricsToken: [] }],
  responses: {
    200: {
      description: "Prometheus's text format.",
      headers: z.object({ 'Cache-Control': noStore }),
      content: { 'text/plain': { schema: z.string() } },
    },
    404: {
      description: `Without the right token, "No such route". With METRICS_TOKEN set, this answer carries neither ${BROKER_ERROR_HEADER} nor Cache-Control (unlike an unknown route's); on a broker without metrics, it is the unknown route's.`,
      content: json(errorBodySchema.extend({ error: errorCode.extract(['not_found']) })),
    },
  },
};

const redirectCheck: ZodOpenApiOperationObject = {
  operationId: 'redirectCheck',
  tags: ['authorization window'],
  summary: 'Whether the broker accepts an extension redirect URL',
  description:
    'Asked by the extension before it opens the authorization window (EXTENSION_REDIRECT_URLS). Rate limited with the other /auth routes, per client address.',
  security: [],
  requestParams: {
    query: z.object({
      redirect_uri: z.string().meta({ description: "The extension's redirect URL." }).optional(),
    }),
  },
  responses: {
    200: {
      description: 'Yes or no, nothing more.',
      headers: z.object({ 'Cache-Control': noStore, ...rateLimitHeaders }),
      content: json(redirectCheckResponseSchema),
    },
    ...brokerErrors(['rate_limited', ...STORE]),
  },
};

const authStart: ZodOpenApiOperationObject = {
  operationId: 'authStart',
  tags: ['authorization window'],
  summary: "Start an authorization (in the extension's authorization window)",
  description:
    "Keeps a pending flow (a fresh `state`, the redirect URL and the PKCE challenge) in the window's cookie session for 10 minutes, then redirects to the provider's authorization page in the asked language.",
  security: [],
  requestParams: { query: authStartQuerySchema },
  responses: {
    302: redirect("To the provider's authorization page, with `client_id`, `state`.", true),
    ...brokerErrors(['rate_limited', ...STORE], {
      400: 'a parameter is missing or not valid, or `redirect_uri` is not an allowed extension redirect URL.',
      ...PAGE_FAILED,
    }),
  },
};

const authCallback: ZodOpenApiOperationObject = {
  operationId: 'authCallback',
  tags: ['authorization window'],
  summary: "The provider's redirect back (end of the authorization)",
  description:
    "Only a callback whose `state` matches a pending flow of this window's session ends that flow (exchanging the code at the allowlisted `api_url`); the provider's denial, without `state`, answers the most recent flow. Every outcome is a redirect to the extension's URL, unless there is no flow at all.",
  security: [{ authCookie: [] }],
  requestParams: {
    query: z.object({
      code: z.string().meta({ description: 'The authorization code.' }).optional(),
      state: z.string().meta({ description: "The flow's `state`." }).optional(),
      api_url: z
        .string()
        .meta({ description: "The license's API URL; must be on API_URL_ALLOWLIST." })
        .optional(),
      error: z
        .string()
        .meta({ description: "The provider's error, e.g. `access_denied`." })
        .optional(),
    }),
  },
  responses: {
    302: redirect(
      `To the extension's redirect URL, with \`handoff\` (redeem it at POST ${routes.session}) or \`error\`: ${AUTH_REDIRECT_ERRORS.map((code) => `\`${code}\``).join(', ')} (components.schemas.AuthRedirectError).`,
      false,
    ),
    ...brokerErrors(['rate_limited', ...STORE], {
      400: 'no sign-in is in progress in this browser.',
      ...PAGE_FAILED,
    }),
  },
};

const createSession: ZodOpenApiOperationObject = {
  operationId: 'createSession',
  tags: ['session'],
  summary: "Redeem a handoff: a new connection, in a new session or the bearer's",
  description:
    'The handoff is burnt on any attempt. With a valid bearer token the connection joins that session; without one (or with an unknown one) a new session is made. A license already in the session is replaced in place and keeps its id. Rate limited per client address.',
  security: [{}, ...bearer],
  requestBody: { required: true, content: json(sessionCreateRequestSchema) },
  responses: {
    201: {
      description: "The session token (the bearer's own when it joined) and the connection.",
      headers: z.object({ 'Cache-Control': noStore, ...rateLimitHeaders }),
      content: json(sessionCreateResponseSchema),
    },
    ...brokerErrors([
      'invalid_request',
      'invalid_grant',
      'invalid_session',
      'rate_limited',
      ...STORE,
    ]),
  },
};

const deleteSession: ZodOpenApiOperationObject = {
  operationId: 'deleteSession',
  tags: ['session'],
  summary: 'Sign out: end the session and remove its connections',
  security: bearer,
  responses: { 204: { description: 'Signed out.' }, ...brokerErrors([...SESSION, ...STORE]) },
};

const listConnections: ZodOpenApiOperationObject = {
  operationId: 'listConnections',
  tags: ['connections'],
  summary: "The session's connections, oldest first",
  security: bearer,
  responses: {
    200: {
      description: 'The connections.',
      headers: z.object({ 'Cache-Control': noStore }),
      content: json(connectionsResponseSchema),
    },
    ...brokerErrors([...SESSION, ...STORE]),
  },
};

const connectionId = z.string().meta({ description: "A connection of the bearer's session." });

const deleteConnection: ZodOpenApiOperationObject = {
  operationId: 'deleteConnection',
  tags: ['connections'],
  summary: 'Remove one connection (its tokens are deleted)',
  security: bearer,
  requestParams: { path: z.object({ id: connectionId }) },
  responses: {
    204: { description: 'Removed.' },
    ...brokerErrors(['invalid_request', ...SESSION, 'not_found', ...STORE]),
  },
};

const PROXY_ERRORS: ErrorCode[] = [
  'invalid_request',
  ...SESSION,
  'reauthorization_required',
  'not_found',
  'upstream_too_large',
  ...STORE,
];

/** What the proxy passes on of the license API's answer. */
const passedThrough: ZodOpenApiResponseObject = {
  description: `The license API's answer about this call, without ${BROKER_ERROR_HEADER}: its status (never 1xx or 3xx: a redirect is the broker's 503), its body as it streams, and of its headers only ${PROXY_ANSWER_HEADERS.join(', ')}; never Set-Cookie or Location. A 401 here is the license API's, not about the session.`,
  headers: z.object({ 'Cache-Control': noStore }),
  content: { '*/*': {} },
};

/** An API call's two URLs: the path form, and the query form that generated clients can call. */
const PROXY_PATHS = {
  path: templated(routes.proxy('{id}', '{path}')),
  query: templated(routes.proxyQuery('{id}', '')).split('?', 1)[0] ?? '',
};
type ProxyForm = keyof typeof PROXY_PATHS;
/** Methods the API routes refuse (400), before the session is read. */
const REFUSED_METHODS = ['HEAD', 'OPTIONS', 'TRACE'] as const;

const PATH_RULE =
  "Refused (400), never normalised, when it could leave api_url in any encoding: a segment `.` or `..` (also before a `;`), an empty segment but the last, a backslash, an encoded `/`, `\\`, `.`, `%` or control character, a look-alike that NFKC changes, a scheme in the first segment, or the token endpoint's folder `oauth2` (in any case or encoding) as the first segment.";

const proxyParams = {
  path: {
    path: z.object({
      id: connectionId,
      path: z
        .string()
        .max(2048)
        .meta({
          description: `The path below the connection's api_url, slashes included (x-baton-rest-of-path), with the query string forwarded as sent. ${PATH_RULE} A generated client encodes this parameter's slashes (\`%2F\`), which this rule refuses: it calls the query form, ${PROXY_PATHS.query}?path=, instead.`,
        }),
    }),
  },
  query: {
    path: z.object({ id: connectionId }),
    query: z.object({
      path: z.string().meta({
        description: `The path below the connection's api_url with its query string, if any (\`invoices/42?status=paid\`): percent-encoded as any query value, and the only query parameter. Decoded once (a \`+\` as a space) and split at its first \`?\`, it is the call that ${PROXY_PATHS.path} makes with that path and query string, held to the same rule, limits and answers: the path at most 2048 characters, and refused (400), never normalised, when it could leave api_url in any encoding (that route's \`path\` says how). Refused too when it decodes to what no request target carries: a space, \`#\`, a control or non-ASCII character.`,
      }),
    }),
  },
} satisfies Record<ProxyForm, unknown>;

const operationId = (method: string, form: ProxyForm): string =>
  `proxy${method[0]}${method.slice(1).toLowerCase()}${form === 'query' ? 'ByQuery' : ''}`;

function proxyOperation(
  method: (typeof PROXY_METHODS)[number],
  form: ProxyForm,
): ZodOpenApiOperationObject {
  return {
    operationId: operationId(method, form),
    tags: ['API calls'],
    summary: `${method} {api_url}/{path}${form === 'query' ? ' (the query form)' : ''}, with the connection's access token`,
    description: `Refreshes the access token first when it is about to expire, and on an upstream 401 to the current token refreshes once and retries (the refresh budget holds back further 401-triggered refreshes only after a refresh that did not cure one); a refused refresh answers reauthorization_required. Its wait for a usable access token is bounded by TOKEN_WAIT_MS (503 upstream_unavailable with Retry-After, nothing sent upstream; the refresh goes on and its pair is kept). The whole call is bounded by PROXY_TIMEOUT_MS (503 before the answer's start, the connection cut after) and its answer by PROXY_MAX_ANSWER_BYTES (502 upstream_too_large when announced larger, cut when it grows past it). Forwards the query string, the body (up to 1 MB) and of the request's headers only ${FORWARDED_REQUEST_HEADERS.join(', ')}: never the caller's Authorization or cookies.`,
    security: bearer,
    'x-baton-pass-through': true,
    requestParams: proxyParams[form],
    ...(method === 'GET' ? {} : { requestBody: { required: false, content: { '*/*': {} } } }),
    responses: { default: passedThrough, ...brokerErrors(PROXY_ERRORS) },
  };
}

function refusedMethod(
  method: (typeof REFUSED_METHODS)[number],
  form: ProxyForm,
): ZodOpenApiOperationObject {
  return {
    operationId: operationId(method, form),
    tags: ['API calls'],
    summary: `${method}: not proxied`,
    description: 'Refused before the session is read.',
    security: [],
    requestParams: proxyParams[form],
    responses: brokerErrors(['invalid_request']),
  };
}

function proxyPathItem(form: ProxyForm): ZodOpenApiPathItemObject {
  return {
    ...(form === 'path' ? { 'x-baton-rest-of-path': 'path' } : {}),
    ...Object.fromEntries(
      PROXY_METHODS.map((method) => [method.toLowerCase(), proxyOperation(method, form)]),
    ),
    ...Object.fromEntries(
      REFUSED_METHODS.map((method) => [method.toLowerCase(), refusedMethod(method, form)]),
    ),
  };
}

/** An operation's JSON pointer, as Redocly reports a problem's place. */
const operationAt = (path: string, method: string): string =>
  `#/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}`;

/**
 * Where the document departs from Redocly's recommended rules, and why: the lint
 * (test/integration/openapi-lint.test.ts) fails on any other problem, and on an exception here
 * that no longer excepts anything.
 */
const LINT_EXCEPTIONS: { rule: string; at: string[]; reason: string }[] = [
  {
    rule: 'operation-2xx-response',
    at: [operationAt(routes.authStart, 'get'), operationAt(routes.authCallback, 'get')],
    reason:
      "The authorization window's routes succeed with a 302: to the provider's authorization page, or back to the extension.",
  },
  {
    rule: 'operation-2xx-response',
    at: Object.values(PROXY_PATHS).flatMap((path) =>
      REFUSED_METHODS.map((method) => operationAt(path, method.toLowerCase())),
    ),
    reason:
      'The API routes refuse HEAD, OPTIONS and TRACE (400 invalid_request): listed so that this answer, rather than UnknownRoute, is the documented one.',
  },
  {
    rule: 'operation-4xx-response',
    at: [operationAt(routes.healthz, 'get'), operationAt(routes.readyz, 'get')],
    reason:
      'The probes take no input and refuse no request: /healthz answers 200 while the process runs, /readyz 200 or 503.',
  },
  {
    rule: 'no-unused-components',
    at: ['ErrorBody', 'ErrorCode', 'AuthRedirectError'].map(
      (name) => `#/components/schemas/${name}`,
    ),
    reason:
      "Named for readers and for generated clients' types: each error answer narrows ErrorBody's `error` to the codes it can carry, and AuthRedirectError travels in a redirect's Location, which no Schema Object describes.",
  },
  {
    rule: 'no-unused-components',
    at: ['#/components/responses/UnknownRoute'],
    reason:
      'The answer to any path or method this document does not list, which no operation can reference.',
  },
];

const errorTable = (Object.entries(ERROR_STATUS) as [ErrorCode, number][])
  .map(([code, status]) => `\`${code}\` ${status}`)
  .join(', ');

const DESCRIPTION = `Baton's broker: it runs the OAuth authorization for the browser extension, keeps the provider's tokens, and proxies API calls. Generated from the zod schemas of @baton/shared by server/scripts/openapi.ts (\`pnpm --filter @baton/server openapi\`); do not edit by hand.

Every error of the broker's own is JSON \`{ error, message }\` (components.schemas.ErrorBody) with the header \`${BROKER_ERROR_HEADER}: <error>\` and \`Cache-Control: no-store\`, plus \`Retry-After\` on 429 and 503. Each code has one status: ${errorTable}. An answer without ${BROKER_ERROR_HEADER} to an API call (x-baton-pass-through) is the license API's, about that call. The only failures without it are the authorization window's pages (text/html), /readyz's 503 and /metrics's 404.

Any path or method not listed here answers components.responses.UnknownRoute. Paths match exactly: in their case, and without a trailing slash (\`/healthz/\` and \`/HEALTHZ\` are unknown routes). HEAD and OPTIONS are answered only where listed (the API routes refuse them), not wherever GET is; the broker sends no CORS headers and answers no preflight: the extension calls it from its background, under its host permission, which needs none.

A call to a license's API has two forms, the same call: ${PROXY_PATHS.path}, the path below api_url in the URL's path, and ${PROXY_PATHS.query}?path=, the same path and query string in one query parameter. Generated clients percent-encode a path parameter's \`/\` (an OpenAPI path parameter cannot allow reserved characters), which the path form refuses: they call the query form.

Every answer also carries fixed security headers (Content-Security-Policy, X-Content-Type-Options, X-Frame-Options; HSTS over https) and an X-Request-Id.`;

export function openApiDocument(): ReturnType<typeof createDocument> {
  const document: ZodOpenApiObject = {
    openapi: '3.1.1',
    info: {
      title: 'Baton broker',
      version: manifest.version,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [
      {
        url: '{broker}',
        description: 'A Baton broker.',
        variables: {
          broker: {
            default: 'https://broker.example.com',
            description: "The broker's PUBLIC_URL: its origin, with no path.",
          },
        },
      },
    ],
    tags: [
      { name: 'authorization window', description: 'Pages and redirects of the sign-in window.' },
      { name: 'session', description: "The extension's session." },
      { name: 'connections', description: 'Licenses connected in a session.' },
      { name: 'API calls', description: "Calls to a license's API, through the broker." },
      { name: 'operations', description: 'For the platform that runs the broker.' },
    ],
    paths: {
      [routes.healthz]: { get: health },
      [routes.readyz]: { get: readiness },
      [routes.metrics]: { get: metricsScrape },
      [routes.redirectCheck]: { get: redirectCheck },
      [routes.authStart]: { get: authStart },
      [routes.authCallback]: { get: authCallback },
      [routes.session]: { post: createSession, delete: deleteSession },
      [routes.connections]: { get: listConnections },
      [templated(routes.connection('{id}'))]: { delete: deleteConnection },
      [PROXY_PATHS.path]: proxyPathItem('path'),
      [PROXY_PATHS.query]: proxyPathItem('query'),
    },
    components: {
      securitySchemes: {
        session: {
          type: 'http',
          scheme: 'bearer',
          description: `The session token of POST ${routes.session}: opaque, in the Authorization header only (never a query parameter or a cookie).`,
        },
        authCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'baton.auth',
          description:
            "The authorization window's session, set by /auth/start (HttpOnly, SameSite=Lax, 10 minutes); named `__Host-baton.auth` when PUBLIC_URL is https.",
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN.' },
      },
      schemas: {
        ErrorBody: errorBodySchema,
        ErrorCode: errorCode.meta({ description: `Each code's status: ${errorTable}.` }),
        AuthRedirectError: z.enum(AUTH_REDIRECT_ERRORS).meta({
          description:
            "What the callback sends back to the extension as `?error=`: `access_denied` is the provider's, the others the broker's.",
        }),
        SessionCreateRequest: sessionCreateRequestSchema,
        SessionCreateResponse: sessionCreateResponseSchema,
        ConnectionsResponse: connectionsResponseSchema,
      },
      responses: {
        UnknownRoute: {
          ...errorResponse(404, ['not_found'], undefined),
          description: 'Any path or method this document does not list: `not_found`.',
        },
      },
    },
    'x-baton-lint-exceptions': LINT_EXCEPTIONS,
  };
  return createDocument(document);
}

/** The document as docs/openapi.json holds it: formatted by the repository's Prettier settings. */
export async function renderOpenApi(): Promise<string> {
  const options = await resolveConfig(OPENAPI_PATH);
  return format(JSON.stringify(openApiDocument(), null, 2), {
    ...options,
    filepath: OPENAPI_PATH,
  });
}

if (import.meta.main) {
  await writeFile(OPENAPI_PATH, await renderOpenApi());
  console.log(`wrote ${OPENAPI_PATH}`);
}
