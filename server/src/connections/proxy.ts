import { checkProxyPath } from '@baton/shared';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { ConnectionRecord, LoadedConnection } from './records.ts';
import { DEFAULT_MAX_ANSWER_BYTES } from '../base/defaults.ts';
import { BrokerError } from '../base/errors.ts';
import type { RefreshReason } from './refresh/policy.ts';
import { exchange, UpstreamError, type Answer, type Bounds } from './upstream.ts';

/** Request headers that may go upstream; everything else (Authorization, Cookie, Host, X-Forwarded-*, hop-by-hop) stays here. */
export const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-encoding',
  'accept-language',
  'content-type',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-unmodified-since',
] as const;

/**
 * A kept-alive connection the license API closed as the call went out on it (it had been idle up
 * to the API's keep-alive timeout): nothing of an answer came. A method without a body that
 * changes nothing is sent again once, on a fresh connection (RFC 9110, 9.2.2), not answered 503.
 */
const RESENT = new Set(['GET', 'HEAD']);
const closedUnder = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
};

const isRedirect = (status: number): boolean => status >= 300 && status < 400;
/** What a second call passes on: anything but a redirect. */
const relayed = (status: number): boolean => !isRedirect(status);

const reauthorize = (): BrokerError =>
  new BrokerError(
    'reauthorization_required',
    'This license is disconnected; authorize Baton again.',
  );

/**
 * One call's budget for waiting on its access token (a refresh, another instance's, the new pair's
 * store), over both of its waits: past it the call answers 503 with Retry-After, instead of its
 * caller's own timeout cutting it with no answer. What the call waited for goes on (a refresh
 * still stores its pair: a rotated pair is never thrown away), and `late` gets what it brings.
 */
function tokenBudget(ms: number, log: Logger, connection: string) {
  // What is left of it: the time upstream between the two waits is PROXY_TIMEOUT_MS's, not this.
  let left = ms;
  return async function within<T>(work: Promise<T>, late?: (value: T) => unknown): Promise<T> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        log.warn(
          { connection, waitedMs: ms },
          'a call stopped waiting for its access token; the refresh goes on',
        );
        void work.then(late).catch(() => undefined);
        reject(
          new BrokerError(
            'upstream_unavailable',
            'A fresh access token is taking long to come; try again shortly.',
            { retryAfter: 2 },
          ),
        );
      }, left);
    });
    try {
      return await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
      left -= performance.now() - started;
    }
  };
}

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
  tokens: CallTokens;
  /** Bound on one upstream call, from its start to its answer's last byte (default 30 s). */
  timeoutMs?: number;
  /** Bytes one answer may relay (default 32 MiB): larger ones are refused or cut. */
  maxAnswerBytes?: number;
  /** Bound on the time one call waits for a usable access token, in all (default 15 s). */
  tokenWaitMs?: number;
}

/**
 * One API call to forward: the client's request (`body` already read; null: none) and where to
 * answer it, session `sid`'s connection, and what the call asks for under api_url (`below`, and
 * `query` its query string, both as the client sent them).
 */
export interface ProxiedCall {
  req: IncomingMessage;
  body: Buffer | null;
  res: ServerResponse;
  sid: string;
  loaded: LoadedConnection;
  below: string;
  query: string | undefined;
}

/** The token service, as the proxy uses it. */
export interface CallTokens {
  /** The connection with an access token usable now (see RefreshReason). */
  usable(sid: string, loaded: LoadedConnection, reason?: RefreshReason): Promise<LoadedConnection>;
  /** Whether an upstream 401 may refresh this record (the refresh budget); else it is passed on. */
  mayRefreshOnRejection(record: ConnectionRecord): boolean;
  /**
   * The retry with a refreshed token was answered `status` (0: not at all). A 401: hold back
   * 401-triggered refreshes a while. Told once per retry, whatever became of it.
   */
  retried(sid: string, loaded: LoadedConnection, status: number): Promise<void>;
}

/**
 * Forwards `/connections/:id/api/<path>` to `{api_url}/<path>` with the connection's access token.
 * One call makes one upstream request, or two when the first is answered 401: then the token is
 * refreshed once (or the refresh another call made is used) and the call retried with the new
 * token, as the provider's specification asks. When the refresh fails the connection is
 * disconnected (reauthorization_required). When the retry is refused too, that 401 is about the
 * path, not the token: it is passed on as the license API's answer (without the broker's error
 * mark), and so is every 401 of that connection for the refresh budget's window. A call that met
 * its 401 just before that window began and finds it under the refresh lock refreshes nothing: it
 * sends the same token again and passes that answer on.
 */
export function createProxy(deps: ProxyDeps) {
  const { tokens } = deps;
  const timeoutMs = deps.timeoutMs ?? 30_000;
  const bounds: Bounds = {
    maxBytes: deps.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    deadlineMs: timeoutMs,
  };

  /** One upstream call with `accessToken`; its answer is relayed into `res` when `relay` says so. */
  async function send(
    { req, body, res }: ProxiedCall,
    target: { origin: string; path: string },
    accessToken: string,
    relay: (status: number) => boolean,
  ): Promise<Answer> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${accessToken}`,
      'user-agent': 'baton-broker',
    };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const options: Dispatcher.DispatchOptions = {
      origin: target.origin,
      path: target.path,
      method: req.method as Dispatcher.HttpMethod,
      headers,
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    };
    for (let attempt = 1; ; attempt++) {
      try {
        return await exchange(deps.dispatcher, options, res, relay, cut, bounds);
      } catch (cause) {
        if (!(cause instanceof UpstreamError)) throw cause;
        if (attempt === 1 && RESENT.has(options.method) && closedUnder(cause.cause)) continue;
        throw new BrokerError('upstream_unavailable', 'The license API did not answer.', {
          retryAfter: 5,
          cause: cause.cause,
        });
      }
    }
  }
  const cut = (error: Error): void => {
    deps.log.warn({ err: error }, 'proxied response interrupted');
  };

  return {
    async forward(call: ProxiedCall): Promise<void> {
      const { sid, loaded, below, query } = call;
      const path = checkProxyPath(below);
      if (path === undefined)
        throw new BrokerError('invalid_request', 'The API path is not allowed.');

      const within = tokenBudget(deps.tokenWaitMs ?? 15_000, deps.log, loaded.record.id);
      let current = await within(tokens.usable(sid, loaded));
      if (!current.record.tokens) throw reauthorize();
      const base = apiBase(current.record);
      const target = {
        origin: base.origin,
        path: `${base.path}/${path}${query === undefined ? '' : `?${query}`}`,
      };

      const record = current.record;
      const accessToken = current.record.tokens.accessToken;
      let answer = await send(call, target, accessToken, (status) =>
        status === 401 ? !tokens.mayRefreshOnRejection(record) : !isRedirect(status),
      );
      if (!answer.relayed && answer.status === 401) {
        // Given up on, a refresh made for this 401 is told that no retry came (its lock goes).
        current = await within(
          tokens.usable(sid, current, { kind: 'rejected', accessToken }),
          (late) => tokens.retried(sid, late, 0),
        );
        if (!current.record.tokens) throw reauthorize();
        // The retry's status is told as soon as it is known, while its body is on its way: a 401
        // again writes the hold, so that the caller's next call finds it (not only once this one
        // has ended), and the refresh lock kept for this answer goes. Told once, answer or not.
        let told: Promise<void> | undefined;
        const retried = current;
        const retryToken = current.record.tokens.accessToken;
        const tell = (status: number): Promise<void> =>
          (told ??= tokens.retried(sid, retried, status).catch((error: unknown) => {
            deps.log.warn({ err: error }, 'could not hold back refreshes after an uncured 401');
          }));
        try {
          answer = await send(call, target, retryToken, (status) => {
            void tell(status);
            return relayed(status);
          });
        } finally {
          await tell(0);
        }
      }
      if (answer.tooLarge)
        throw new BrokerError(
          'upstream_too_large',
          `The license API's answer is larger than the ${bounds.maxBytes} bytes the broker passes on.`,
        );
      if (!answer.relayed)
        throw new BrokerError(
          'upstream_unavailable',
          'The license API answered with a redirect, which the broker does not follow.',
          { retryAfter: 5 },
        );
    },
  };
}
