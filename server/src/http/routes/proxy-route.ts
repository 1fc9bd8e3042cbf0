import { PROXY_MAX_REQUEST_BYTES, PROXY_METHODS, routeTemplates } from '@baton/shared';
import express, { type Request, type Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Track } from '../access-log.ts';
import { BrokerError, invalidRequest } from '../../base/errors.ts';
import { createProxy, type ProxyDeps } from '../../connections/proxy.ts';
import type { ConnectionLoader } from '../../connections/loader.ts';
import type { RequireSid } from '../session-auth.ts';

export interface ProxyRouteDeps extends ProxyDeps {
  requireSid: RequireSid;
  loadConnection: ConnectionLoader;
  /** The access log and metrics, as for every other route. */
  track: Track;
  /** The headers every answer carries. */
  prepare: (res: ServerResponse) => void;
  /** The broker's one error answer. */
  fail: (res: ServerResponse, error: unknown) => void;
}

/** The route's template, as the metrics name it. */
const PROXY_ROUTE = routeTemplates.proxy;
const routeName = (): string => PROXY_ROUTE;
/**
 * The route, the one place it is written as a pattern: the connection id (still encoded), the
 * path below api_url (none in the query form, `/api?path=`), and the query string.
 */
const PROXY_PATH = /^\/connections\/([^/?]+)\/api(?:\/([^?]*))?(?:\?(.*))?$/s;

/**
 * An API call's URL, matched: [, connection id (encoded), path below api_url or undefined in the
 * query form, query].
 */
export type ProxyMatch = RegExpExecArray;

/** What an API call asks for under api_url: the path and the query string, as sent. */
interface Below {
  below: string;
  query: string | undefined;
}

const QUERY_FORM = 'path=';
/** What a request target can carry (no space, control character, `#` or non-ASCII). */
const TARGET_CHARACTERS = /^[\x21\x22\x24-\x7e]*$/;

/**
 * The query form's path below api_url and query string, exactly as the path form would carry
 * them: `?path=` is the only parameter, its value percent-decoded once (a `+` as a space, as forms
 * send it) and split at its first `?`. Refused when it could not have come in a request target;
 * the path's own check (checkProxyPath) is the path form's, in createProxy.
 */
function queryForm(query: string | undefined): Below {
  if (query === undefined || !query.startsWith(QUERY_FORM) || query.includes('&'))
    throw invalidRequest(
      'Expected one query parameter, path: the path below api_url, with its query string.',
    );
  let target: string;
  try {
    target = decodeURIComponent(query.slice(QUERY_FORM.length).replaceAll('+', ' '));
  } catch {
    throw invalidRequest('The path parameter is not well encoded.');
  }
  if (!TARGET_CHARACTERS.test(target)) throw invalidRequest('The API path is not allowed.');
  const mark = target.indexOf('?');
  return mark === -1
    ? { below: target, query: undefined }
    : { below: target.slice(0, mark), query: target.slice(mark + 1) };
}

/**
 * `/connections/:id/api/<path>`, and its query form `/connections/:id/api?path=<path>` for
 * generated clients (docs/openapi.json): every API call, served on plain node:http rather than
 * through Express. It is the one route on the hot path, and Express's per-request
 * set-up and router walk cost more than everything the route itself does; the steps are those the
 * Express routes take (access log and metrics, security headers, the same errors), in the same
 * order: the method, the session, the body, the connection, then the upstream call.
 */
export function proxyRoute(deps: ProxyRouteDeps) {
  const { requireSid, loadConnection, track, prepare, fail } = deps;
  const proxy = createProxy(deps);
  const raw = express.raw({ type: () => true, limit: PROXY_MAX_REQUEST_BYTES });

  /** The request body (up to `PROXY_MAX_REQUEST_BYTES`, 1 MiB), or null when it has none. */
  const readBody = (req: IncomingMessage, res: ServerResponse): Promise<Buffer | null> | null =>
    !hasBody(req)
      ? null
      : new Promise((resolve, reject) => {
          raw(req as Request, res as Response, (error?: unknown) => {
            if (error) {
              reject(error instanceof Error ? error : new Error(String(error)));
              return;
            }
            const body = (req as Request).body as unknown;
            resolve(Buffer.isBuffer(body) && body.length > 0 ? body : null);
          });
        });

  return {
    /** The parts of `url` when it is an API call, else null. */
    match(url: string): ProxyMatch | null {
      return PROXY_PATH.exec(url);
    },

    async handle(req: IncomingMessage, res: ServerResponse, call: ProxyMatch): Promise<void> {
      track(req, res, routeName);
      prepare(res);
      try {
        const method = req.method ?? '';
        if (!(PROXY_METHODS as readonly string[]).includes(method))
          throw new BrokerError('invalid_request', `The method ${method} is not proxied.`);
        const rawId = call[1] ?? '';
        // The session first (its record read with it), then the body, then the connection.
        const sid = await requireSid(req, rawId.includes('%') ? undefined : rawId);
        const body = await readBody(req, res);
        const loaded = await loadConnection(sid, decodeId(rawId));
        const { below, query } =
          call[2] === undefined ? queryForm(call[3]) : { below: call[2], query: call[3] };
        await proxy.forward({ req, body, res, sid, loaded, below, query });
      } catch (error) {
        fail(res, error);
      }
    },
  };
}

/** As body-parser decides it: a length above 0, or a chunked body. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function decodeId(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new BrokerError('invalid_request', 'The connection id is not well encoded.');
  }
}
