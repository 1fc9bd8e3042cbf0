import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { z } from 'zod';
import type { ActionResult, AdminUseCases, ConnectionQuery } from '../../admin/types.ts';
import { actorOf, requireOperator } from './auth.ts';
import { AdminError, invalid } from './errors.ts';
import {
  actionResultSchema,
  actorSchema,
  censusJobSchema,
  connectionIdSchema,
  connectionsAnswerSchema,
  connectionsQuerySchema,
  deadLettersAnswerSchema,
  deadLettersQuerySchema,
  DEFAULT_LIMIT,
  endSessionsBodySchema,
  eventIdSchema,
  overviewSchema,
  reencryptJobSchema,
  sessionRefSchema,
  sweepAnswerSchema,
} from './schemas.ts';

/** The admin API's paths, below /api/v1 (the OpenAPI document spells them with `{id}`). */
export const ADMIN_ROUTES = {
  whoami: '/whoami',
  overview: '/overview',
  connections: '/connections',
  disconnect: '/connections/:id/disconnect',
  endSession: '/sessions/:ref/end',
  endLicenceSessions: '/licences/end-sessions',
  deadLetters: '/dead-letters',
  redeliver: '/dead-letters/:id/redeliver',
  deadLetter: '/dead-letters/:id',
  reencrypt: '/jobs/reencrypt',
  census: '/jobs/census',
  sweep: '/events/sweep',
} as const;
export const ADMIN_API_BASE = '/api/v1';

/** The routes that read a query string; every other refuses one. */
const QUERY_ROUTES = new Set<string>([ADMIN_ROUTES.connections, ADMIN_ROUTES.deadLetters]);

/** Bodies are small JSON objects: a licence URL at most. */
const BODY_LIMIT = '4kb';

const PARAMETER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,19}$/;

/**
 * `value` parsed by `schema`, or 400 naming the parameter and what it must be (never echoing the
 * value: a mistaken paste could be a token).
 */
function parsed<T extends z.ZodType>(schema: T, value: unknown, what: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const name = issue?.path.length ? String(issue.path[0]) : what;
  if (issue?.code === 'unrecognized_keys') {
    // Named when it reads as a parameter's name; a long one could be a token put there.
    const names = issue.keys.filter((key) => PARAMETER_NAME.test(key));
    throw invalid(
      names.length === issue.keys.length
        ? `Unknown ${what}: ${names.join(', ')}.`
        : `Unknown ${what}.`,
    );
  }
  if (issue?.code === 'invalid_type')
    throw invalid(
      Array.isArray((value as Record<string, unknown> | undefined)?.[name])
        ? `${name} must be given once.`
        : `${name} is required${what === 'body' ? ' (a JSON object)' : ''}.`,
    );
  throw invalid(`${name} ${issue?.message ?? 'is not valid'}.`);
}

/** What the access line names as the call's target: ids, references, licences; never a token. */
const target = (res: Response, value: string): void => {
  res.locals.target = value;
};

/** An action's answer: 404 when there was nothing to act on, else 200 with what changed. */
function acted(res: Response, result: ActionResult): void {
  const answer = actionResultSchema.parse(result);
  if (answer.error === 'not_found')
    throw new AdminError('not_found', 'Nothing found to act on: it may be gone already.');
  res.json(answer);
}

/** `id` of a path parameter. */
const param = (req: Request, name: string): unknown =>
  (req.params as Record<string, unknown>)[name];

/** GET /connections: exactly one way to find them. */
function connectionQuery(query: z.output<typeof connectionsQuerySchema>): ConnectionQuery {
  const { connection, session, licence } = query;
  const ways: ConnectionQuery[] = [
    ...(connection === undefined ? [] : [{ connectionId: connection }]),
    ...(session === undefined ? [] : [{ sessionRef: session }]),
    ...(licence === undefined ? [] : [{ licence }]),
  ];
  const [way, ...others] = ways;
  if (way === undefined || others.length > 0)
    throw invalid('Give exactly one of connection, session or licence to find connections by.');
  return way;
}

/**
 * The routes of /api/v1 over the use cases: each parses its parameters, calls one use case and
 * answers through the answer's schema. The gate (auth.ts) has set the actor before any of them.
 */
export function adminRoutes(useCases: AdminUseCases): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  const actor = (res: Response) => {
    const who = actorOf(res);
    if (!who) throw new AdminError('unauthenticated', 'An admin token is required.');
    return who;
  };
  const R = ADMIN_ROUTES;
  /**
   * A route, named for the call log before its handlers run; one that takes no query refuses one
   * (nothing sent is silently ignored).
   */
  const on = (method: 'get' | 'post' | 'delete', path: string, ...handlers: RequestHandler[]) => {
    router[method](
      path,
      (req, res, next) => {
        res.locals.route = `${ADMIN_API_BASE}${path}`;
        if (!QUERY_ROUTES.has(path) && Object.keys(req.query as object).length > 0)
          next(invalid('This route takes no query parameters.'));
        else next();
      },
      ...handlers,
    );
  };

  on('get', R.whoami, (_req, res) => {
    res.json(actorSchema.parse(actor(res)));
  });
  on('get', R.overview, async (_req, res) => {
    res.json(overviewSchema.parse(await useCases.overview()));
  });
  on('get', R.connections, async (req, res) => {
    const query = parsed(connectionsQuerySchema, req.query, 'query parameter');
    const by = connectionQuery(query);
    target(res, Object.values(by)[0] as string);
    const connections = await useCases.findConnections(by, query.limit ?? DEFAULT_LIMIT);
    res.json(connectionsAnswerSchema.parse({ connections }));
  });
  on('post', R.disconnect, requireOperator, async (req, res) => {
    const id = parsed(connectionIdSchema, param(req, 'id'), 'id');
    target(res, id);
    acted(res, await useCases.disconnect(id, actor(res)));
  });
  on('post', R.endSession, requireOperator, async (req, res) => {
    const ref = parsed(sessionRefSchema, param(req, 'ref'), 'ref');
    target(res, ref);
    acted(res, await useCases.endSession(ref, actor(res)));
  });
  on(
    'post',
    R.endLicenceSessions,
    requireOperator,
    express.json({ limit: BODY_LIMIT, strict: true }),
    async (req, res) => {
      const body: unknown = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw invalid('The body must be a JSON object { "licence": "<api_url>" }.');
      const { licence } = parsed(endSessionsBodySchema, body, 'body');
      target(res, licence);
      acted(res, await useCases.endSessionsOfLicence(licence, actor(res)));
    },
  );
  on('get', R.deadLetters, async (req, res) => {
    const query = parsed(deadLettersQuerySchema, req.query, 'query parameter');
    const deadLetters = await useCases.deadLetters({
      limit: query.limit ?? DEFAULT_LIMIT,
      ...(query.reason === undefined ? {} : { reason: query.reason }),
    });
    res.json(deadLettersAnswerSchema.parse({ deadLetters }));
  });
  on('post', R.redeliver, requireOperator, async (req, res) => {
    const id = parsed(eventIdSchema, param(req, 'id'), 'id');
    target(res, id);
    acted(res, await useCases.redeliver(id, actor(res)));
  });
  on('delete', R.deadLetter, requireOperator, async (req, res) => {
    const id = parsed(eventIdSchema, param(req, 'id'), 'id');
    target(res, id);
    acted(res, await useCases.discard(id, actor(res)));
  });
  on('get', R.reencrypt, async (_req, res) => {
    res.json(reencryptJobSchema.parse(await useCases.reencryptJob()));
  });
  on('post', R.reencrypt, requireOperator, async (_req, res) => {
    res.status(202).json(reencryptJobSchema.parse(await useCases.startReencrypt(actor(res))));
  });
  on('get', R.census, async (_req, res) => {
    res.json(censusJobSchema.parse(await useCases.censusJob()));
  });
  on('post', R.census, requireOperator, async (_req, res) => {
    res.status(202).json(censusJobSchema.parse(await useCases.startCensus(actor(res))));
  });
  on('post', R.sweep, requireOperator, async (_req, res) => {
    res.json(sweepAnswerSchema.parse(await useCases.sweepEvents(actor(res))));
  });
  return router;
}
