import { ipKeyGenerator } from 'express-rate-limit';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { BrokerError, invalidSession } from '../base/errors.ts';
import { KeyedBuckets } from './limits.ts';
import type { Sessions } from '../connections/sessions.ts';

const BEARER = /^Bearer ([A-Za-z0-9_-]{1,128})$/;

/** The bearer token of a request, from the Authorization header only (never a query or cookie). */
export function bearer(headers: IncomingHttpHeaders): string | undefined {
  return BEARER.exec(headers.authorization ?? '')?.[1];
}

export interface SessionGateOptions {
  sessions: Sessions;
  now: () => number;
  /** The client address of a request, as Express's `req.ip` (trust proxy applied). */
  addressOf: (req: IncomingMessage) => string;
  /**
   * Failed session checks one client (an IPv4 address, an IPv6 /56) may make per minute before it
   * gets 429 (per instance).
   */
  failuresPerMinute: number;
  /** Calls one session may make per minute (per instance); 0: no limit. */
  callsPerMinute: number;
}

/**
 * How many leading bits of an IPv6 address name one client: an ISP hands a household or a
 * server a /56 (RIPE-690), so each address of it is the same client to a limit. The
 * authorization routes' limits (express-rate-limit) count the same way.
 */
export const IPV6_CLIENT_PREFIX = 56;

/**
 * The session check of every bearer route: the session id of a request's bearer token, or 401
 * invalid_session. Both limits are kept in process, so neither costs a Redis round trip: an
 * address whose checks keep failing gets 429 before its next token reaches the store (unknown
 * tokens are never cached, so each would be a Redis read), and each session gets a budget of
 * calls.
 */
export function createSessionGate(options: SessionGateOptions) {
  const { sessions, now } = options;
  // IPv4 as it is; IPv6 by its /56; IPv4-mapped IPv6 as IPv4.
  const addressOf = (req: IncomingMessage) =>
    ipKeyGenerator(options.addressOf(req), IPV6_CLIENT_PREFIX);
  const minute = 60_000;
  const failures = new KeyedBuckets({ limit: options.failuresPerMinute, windowMs: minute, now });
  const calls =
    options.callsPerMinute > 0
      ? new KeyedBuckets({ limit: options.callsPerMinute, windowMs: minute, now })
      : undefined;

  /** `connection`: the connection the call reads next (its record comes with the session). */
  return async function requireSid(req: IncomingMessage, connection?: string): Promise<string> {
    // The address is worked out only while some address has failed lately.
    const address = failures.size > 0 ? addressOf(req) : undefined;
    if (address !== undefined) {
      const wait = failures.wait(address);
      if (wait > 0) throw rateLimited(wait);
    }
    const token = bearer(req.headers);
    const sid = token === undefined ? null : await sessions.resolve(token, connection);
    if (sid === null) {
      failures.take(address ?? addressOf(req));
      throw invalidSession();
    }
    const wait = calls?.take(sid) ?? 0;
    if (wait > 0) throw rateLimited(wait);
    return sid;
  };
}
export type RequireSid = ReturnType<typeof createSessionGate>;

const rateLimited = (waitMs: number): BrokerError =>
  new BrokerError('rate_limited', 'Too many requests; slow down.', {
    retryAfter: Math.max(1, Math.ceil(waitMs / 1000)),
  });
