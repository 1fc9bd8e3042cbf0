import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { ConnectionRecord, LoadedConnection } from './records.ts';
import { BrokerError } from '../errors.ts';
import type { RefreshReason } from './refresh/policy.ts';

/** Request headers that may go upstream; everything else (Authorization, Cookie, Host, X-Forwarded-*, hop-by-hop) stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-unmodified-since',
] as const;

/** Response headers that may come back; never Set-Cookie, Location or hop-by-hop headers. */
const RETURNED_RESPONSE_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'etag',
  'last-modified',
  'retry-after',
] as const;

const PLAIN_PATH = /^(?:[A-Za-z0-9_-][A-Za-z0-9._~-]*\/)*(?:[A-Za-z0-9_-][A-Za-z0-9._~-]*)?$/;
const FORBIDDEN_ENCODINGS = /%(?:2f|5c|2e|25|00|[01][0-9a-f]|7f)/i;

/**
 * The path below api_url that a proxied call asks for, exactly as it will be sent, or undefined
 * when it could leave api_url in any encoding. Refused, never normalised.
 */
export function checkProxyPath(raw: string): string | undefined {
  if (raw.length > 2048) return undefined;
  // Nearly every call: unreserved characters only, no segment that starts with a dot or is empty
  // but the last. Nothing below could refuse such a path, so it is not decoded to be checked.
  if (PLAIN_PATH.test(raw)) return raw;
  if (!/^[\x21-\x7e]*$/.test(raw)) return undefined;
  if (raw.includes('\\') || FORBIDDEN_ENCODINGS.test(raw)) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  // Look-alikes (a fullwidth solidus or full stop) become real separators under NFKC.
  if (decoded.normalize('NFKC') !== decoded) return undefined;
  const segments = decoded.split('/');
  const last = segments.length - 1;
  // Servlet containers (Tomcat, Spring) drop a `;parameter` from a segment before resolving it,
  // so `..;x` climbs as `..` does.
  const unsafe = (segment: string, index: number) => {
    const name = segment.split(';', 1)[0];
    return (segment === '' && index !== last) || name === '.' || name === '..';
  };
  if (segments.some(unsafe) || (segments[0] ?? '').includes(':')) return undefined;
  return raw;
}

/**
 * Streams an upstream body to the client; when either side fails, both are destroyed (the
 * upstream connection is released, the client sees a cut answer, never a short one passed off as
 * whole). Not `stream.pipeline`: it builds an AbortController and so a DOMException per call,
 * which under load cost about 5 % of the broker's CPU.
 */
export function relay(body: Readable, res: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: Error): void => {
      body.destroy();
      res.destroy();
      reject(error);
    };
    body.once('error', fail);
    res.once('close', () => {
      if (res.writableFinished) resolve();
      else fail(new Error('the client closed the connection before the answer ended'));
    });
    body.pipe(res);
  });
}

/** Drop an upstream body we will not pass on, keeping the connection reusable when it is small. */
export async function discard(response: Dispatcher.ResponseData): Promise<void> {
  await response.body.dump({ limit: 64 * 1024 }).catch(() => {});
}

const reauthorize = (): BrokerError =>
  new BrokerError(
    'reauthorization_required',
    'This license is disconnected; authorize Baton again.',
  );

const bases = new WeakMap<ConnectionRecord, { origin: string; path: string }>();

/** A record's api_url as origin and path, parsed once per record read (records.ts's identity rule). */
function apiBase(record: ConnectionRecord): { origin: string; path: string } {
  let base = bases.get(record);
  if (!base) {
    const url = new URL(record.apiUrl);
    base = { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
    bases.set(record, base);
  }
  return base;
}

export interface ProxyDeps {
  dispatcher: Dispatcher;
  log: Logger;
  timeoutMs?: number;
}

/** The token service, as the proxy uses it. */
export interface CallTokens {
  /** The connection with an access token usable now (see RefreshReason). */
  usable(sid: string, loaded: LoadedConnection, reason?: RefreshReason): Promise<LoadedConnection>;
  /** Whether an upstream 401 may refresh this record (the refresh budget); else it is passed on. */
  mayRefreshOnRejection(record: ConnectionRecord): boolean;
}

/**
 * Forwards `/connections/:id/api/<path>` to `{api_url}/<path>` with the connection's access token.
 * One call makes one upstream request, or two when the first is answered 401, the refresh budget
 * allows a refresh, and the refresh gave a new token. Any other 401 is passed on as the license
 * API's answer (without the broker's error mark).
 */
export function createProxy(deps: ProxyDeps) {
  const timeoutMs = deps.timeoutMs ?? 30_000;

  async function send(
    req: IncomingMessage,
    body: Buffer | null,
    target: { origin: string; path: string },
    accessToken: string,
  ): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${accessToken}`,
      'user-agent': 'baton-broker',
    };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    try {
      return await deps.dispatcher.request({
        origin: target.origin,
        path: target.path,
        method: req.method as Dispatcher.HttpMethod,
        headers,
        body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (cause) {
      throw new BrokerError('upstream_unavailable', 'The license API did not answer.', {
        retryAfter: 5,
        cause,
      });
    }
  }

  return {
    /**
     * `body`: the request's, already read (null: none); `loaded`: session `sid`'s connection;
     * `below`: the path the call asks for under api_url, and `query` its query string, both as
     * the client sent them.
     */
    async forward(
      req: IncomingMessage,
      body: Buffer | null,
      res: ServerResponse,
      sid: string,
      loaded: LoadedConnection,
      tokens: CallTokens,
      below: string,
      query: string | undefined,
    ): Promise<void> {
      const path = checkProxyPath(below);
      if (path === undefined)
        throw new BrokerError('invalid_request', 'The API path is not allowed.');

      let current = await tokens.usable(sid, loaded);
      if (!current.record.tokens) throw reauthorize();
      const base = apiBase(current.record);
      const target = {
        origin: base.origin,
        path: `${base.path}/${path}${query === undefined ? '' : `?${query}`}`,
      };

      let upstream = await send(req, body, target, current.record.tokens.accessToken);
      if (upstream.statusCode === 401 && tokens.mayRefreshOnRejection(current.record)) {
        await discard(upstream);
        const rejected = current.record.tokens.accessToken;
        current = await tokens.usable(sid, current, { kind: 'rejected', accessToken: rejected });
        if (!current.record.tokens) throw reauthorize();
        upstream = await send(req, body, target, current.record.tokens.accessToken);
      }
      if (upstream.statusCode >= 300 && upstream.statusCode < 400) {
        await discard(upstream);
        throw new BrokerError(
          'upstream_unavailable',
          'The license API answered with a redirect, which the broker does not follow.',
          { retryAfter: 5 },
        );
      }

      res.statusCode = upstream.statusCode;
      for (const name of RETURNED_RESPONSE_HEADERS) {
        const value = upstream.headers[name];
        if (value !== undefined) res.setHeader(name, value);
      }
      res.setHeader('Cache-Control', 'no-store');
      try {
        await relay(upstream.body, res);
      } catch (error) {
        deps.log.warn({ err: error }, 'proxied response interrupted');
      }
    },
  };
}
