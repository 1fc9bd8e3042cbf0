import type { Answered } from '../ops/metrics.ts';
import { namedRoute } from '../base/tracing.ts';
import type { Request, RequestHandler } from 'express';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Follows one request to its end: gives it an id (a well-formed incoming X-Request-Id, else a new
 * one, echoed back), then writes one line with its id, method, path, status and duration. The path
 * only, never the query: a query may hold a code, a state or a handoff. The line is built from those
 * fields alone, so it is written without pino's redaction pass, which cost about 5 % of the
 * broker's CPU on a proxied call. `route` names the route template, asked once the answer is done.
 */
export type Track = (req: IncomingMessage, res: ServerResponse, route: () => string) => void;

/** Express trims req.url inside mounted routers; originalUrl keeps the whole of it. */
const url = (req: IncomingMessage & { originalUrl?: string }): string =>
  req.originalUrl ?? req.url ?? '';

/** A URL's path, without the query, at most 512 characters. */
function pathOf(url: string): string {
  const query = url.indexOf('?');
  return url.slice(0, Math.min(query === -1 ? url.length : query, 512));
}

export function createTracker(log: Logger, answered?: Answered): Track {
  const lines = log.child({}, { redact: [] });
  return (req, res, route) => {
    const started = performance.now();
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    // `on`, not `once`: 'close' comes once, and `once` wraps the listener in two more objects.
    res.on('close', () => {
      const ms = performance.now() - started;
      const method = req.method ?? '';
      const line = {
        reqId: id,
        method,
        path: pathOf(url(req)),
        status: res.statusCode,
        ms: Math.round(ms * 10) / 10,
      };
      if (!res.writableFinished) {
        lines.warn(line, 'request aborted');
        return;
      }
      const template = route();
      namedRoute(res, method, template);
      answered?.(method, template, res.statusCode, ms / 1000);
      if (res.statusCode >= 500) lines.error(line, 'request completed');
      else if (res.statusCode >= 400) lines.warn(line, 'request completed');
      else lines.info(line, 'request completed');
    });
  };
}

/** The tracker as Express middleware; the route is Express's matched template. */
export function accessLog(track: Track): RequestHandler {
  const route = (req: Request) => () =>
    req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
  return (req, res, next) => {
    track(req, res, route(req));
    next();
  };
}

/**
 * The request id this response was given, for other log lines about the same request: read back
 * from its header rather than kept beside it. A WeakMap of responses gained an entry per call and
 * moved to a larger table between two scavenges, which each then had to copy (docs/performance.md,
 * "What survives a scavenge").
 */
export function requestId(res: ServerResponse): string | undefined {
  const id = res.getHeader('X-Request-Id');
  return typeof id === 'string' ? id : undefined;
}
