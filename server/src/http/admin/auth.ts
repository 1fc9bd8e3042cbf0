import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import type { Actor } from '../../admin/types.ts';
import { KeyedBuckets } from '../limits.ts';
import { IPV6_CLIENT_PREFIX } from '../session-auth.ts';
import { AdminError } from './errors.ts';
import type { Authenticate } from './tokens.ts';

export interface AdminAuthOptions {
  authenticate: Authenticate;
  now: () => number;
  /** Failed authentications one client address may make a minute before 429 (default 10). */
  failuresPerMinute?: number;
}

export const DEFAULT_ADMIN_FAILURES_PER_MINUTE = 10;

/** The actor of an authenticated request (set by the gate, read by the routes and the log). */
export function actorOf(res: Response): Actor | undefined {
  return (res.locals as { actor?: Actor }).actor;
}

/**
 * The gate in front of /api: 401 unauthenticated for a missing or unknown token, and 429
 * too_many_attempts once an address has failed too often. Failures are counted per client address
 * (an IPv6 /56 as one), in process and on the injected clock; successful calls cost nothing. The
 * address is the socket's: the admin listener trusts no proxy header, so nobody can pick the
 * address a failure is counted against.
 */
export function adminGate(options: AdminAuthOptions): RequestHandler {
  const limit = options.failuresPerMinute ?? DEFAULT_ADMIN_FAILURES_PER_MINUTE;
  const failures = new KeyedBuckets({ limit, windowMs: 60_000, now: options.now, maxKeys: 10_000 });
  return (req: Request, res: Response, next: NextFunction) => {
    const address = ipKeyGenerator(req.socket.remoteAddress ?? 'unknown', IPV6_CLIENT_PREFIX);
    const wait = failures.wait(address);
    if (wait > 0) {
      next(
        new AdminError(
          'too_many_attempts',
          'Too many failed authentications from this address; wait before trying again.',
          Math.max(1, Math.ceil(wait / 1000)),
        ),
      );
      return;
    }
    const entry = options.authenticate(req.get('authorization'));
    if (entry === null) {
      failures.take(address);
      next(
        new AdminError(
          'unauthenticated',
          req.get('authorization') === undefined
            ? 'An admin token is required: Authorization: Bearer <token>.'
            : 'The admin token is not valid.',
        ),
      );
      return;
    }
    const actor: Actor = { name: entry.name, role: entry.role };
    res.locals.actor = actor;
    next();
  };
}

/** Operator actions: a viewer's token is known but not allowed (403, unlike a wrong token's 401). */
export const requireOperator: RequestHandler = (_req, res, next) => {
  if (actorOf(res)?.role === 'operator') next();
  else next(new AdminError('forbidden', 'This action needs an operator token; yours is a viewer.'));
};
