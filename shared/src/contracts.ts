import { z } from 'zod';
import { CODE_CHALLENGE_PATTERN, CODE_VERIFIER_PATTERN } from './pkce.ts';

/** Languages of the provider's authorization pages. */
export const LOCALES = ['fr', 'nl'] as const;
export type Locale = (typeof LOCALES)[number];

/** The broker's routes, as the extension and the tests address them. */
export const routes = {
  authStart: '/auth/start',
  authCallback: '/auth/callback',
  redirectCheck: '/auth/redirect-check',
  session: '/session',
  connections: '/connections',
  connection: (id: string) => `/connections/${encodeURIComponent(id)}`,
  proxy: (id: string, path: string) => `/connections/${encodeURIComponent(id)}/api/${path}`,
  /**
   * The same call in the query form, for clients that encode a path parameter's `/` (generated
   * ones do): `path` is the path below api_url with its query string, in one query parameter.
   */
  proxyQuery: (id: string, path: string) =>
    `/connections/${encodeURIComponent(id)}/api?path=${encodeURIComponent(path)}`,
  healthz: '/healthz',
  readyz: '/readyz',
  metrics: '/metrics',
} as const;

/** `GET /healthz` answer: the process is up (it says nothing of the store). */
export const healthResponseSchema = z.object({ status: z.literal('ok') });
export type HealthResponse = z.infer<typeof healthResponseSchema>;

/** What `GET /readyz` answers: 200 with `ready`, else 503 with why not. */
export const READY_STATUSES = [
  'ready',
  'shutting_down',
  'encryption_key_missing',
  'store_unavailable',
] as const;
export type ReadyStatus = (typeof READY_STATUSES)[number];
export const readinessResponseSchema = z.object({ status: z.enum(READY_STATUSES) });
export type ReadinessResponse = z.infer<typeof readinessResponseSchema>;

/**
 * The routes with parameters as the broker's router (Express 5) matches them and its metrics and
 * traces name them; `routes` builds the concrete paths.
 */
export const routeTemplates = {
  auth: '/auth',
  connection: '/connections/:id',
  proxy: '/connections/:id/api/{*path}',
} as const;

/** `GET /auth/start` query. */
export const authStartQuerySchema = z.object({
  locale: z.enum(LOCALES),
  redirect_uri: z.string().min(1).max(2048),
  // As patterns rather than refinements, so that the JSON Schema (docs/openapi.json) says them too.
  code_challenge: z
    .string()
    .regex(CODE_CHALLENGE_PATTERN, 'must be a base64url SHA-256 (43 characters)'),
  code_challenge_method: z.literal('S256'),
});
export type AuthStartQuery = z.infer<typeof authStartQuerySchema>;

/**
 * `GET /auth/redirect-check?redirect_uri=…`: whether the broker accepts this extension redirect URL
 * (EXTENSION_REDIRECT_URLS), asked before the authorization window opens. Rate limited with the
 * other /auth routes; it says nothing but yes or no.
 */
export const redirectCheckResponseSchema = z.object({ allowed: z.boolean() });
export type RedirectCheckResponse = z.infer<typeof redirectCheckResponseSchema>;

/** `POST /session` body: redeem the one-time handoff from the end of the flow. */
export const sessionCreateRequestSchema = z.object({
  handoff: z.string().min(1).max(256),
  code_verifier: z.string().regex(CODE_VERIFIER_PATTERN, 'must be an RFC 7636 code verifier'),
});
export type SessionCreateRequest = z.infer<typeof sessionCreateRequestSchema>;

/** Why a connection stopped working; the user must authorize again. */
export const DISCONNECTED_REASONS = [
  'refresh_rejected',
  'refresh_response_lost',
  'api_url_not_allowed',
  'disconnected_by_operator',
] as const;
export type DisconnectedReason = (typeof DISCONNECTED_REASONS)[number];

export const connectionSchema = z.object({
  id: z.string(),
  status: z.enum(['connected', 'disconnected']),
  api_origin: z.string(),
  connected_at: z.iso.datetime(),
  access_expires_at: z.iso.datetime().nullable(),
  disconnected_reason: z.enum(DISCONNECTED_REASONS).optional(),
});
export type Connection = z.infer<typeof connectionSchema>;

/** `POST /session` answer (201). */
export const sessionCreateResponseSchema = z.object({
  session_token: z.string(),
  connection: connectionSchema,
});
export type SessionCreateResponse = z.infer<typeof sessionCreateResponseSchema>;

/** `GET /connections` answer. */
export const connectionsResponseSchema = z.object({
  connections: z.array(connectionSchema),
});
export type ConnectionsResponse = z.infer<typeof connectionsResponseSchema>;

/** Methods the proxy forwards to `{api_url}/<path>`. */
export const PROXY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The largest body a proxied call may send (1 MiB): the broker reads no more, and the extension
 * refuses a larger one before it leaves.
 */
export const PROXY_MAX_REQUEST_BYTES = 1024 * 1024;

/**
 * The license API's answer headers the proxy passes on, in the order docs/openapi.json lists them;
 * never Set-Cookie, Location, a hop-by-hop header or the broker's mark (`BROKER_ERROR_HEADER`).
 */
export const PROXY_ANSWER_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'etag',
  'last-modified',
  'retry-after',
] as const;
export type ProxyAnswerHeader = (typeof PROXY_ANSWER_HEADERS)[number];

/**
 * Of those, the two that frame the bytes on the wire: a reader of the decoded body (the
 * extension's API) has no use for them, and passes on only the others.
 */
export const PROXY_FRAMING_HEADERS = [
  'content-length',
  'content-encoding',
] as const satisfies readonly ProxyAnswerHeader[];
