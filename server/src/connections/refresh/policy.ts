import { backoffMs, type BackoffShape } from '../../base/backoff.ts';
import type { ConnectionRecord } from '../records.ts';

/**
 * Why a refresh is asked for: the access token is near or past its expiry (`proactive`), or the
 * license API just answered 401 to `accessToken` (`rejected`). The two differ in when the refresh
 * is still needed once the lock is held, and in what a failed refresh leaves usable.
 */
export type RefreshReason =
  { readonly kind: 'proactive' } | { readonly kind: 'rejected'; readonly accessToken: string };

export const PROACTIVE: RefreshReason = Object.freeze({ kind: 'proactive' });

export type ExpiryVerdict = 'disconnected' | 'fresh' | 'expiring' | 'expired';

/** Whether a connection's access token should be refreshed now, and why. Pure. */
export function shouldRefresh(
  record: ConnectionRecord,
  now: number,
  aheadMs: number,
): { refresh: boolean; reason: ExpiryVerdict } {
  if (record.status !== 'connected' || !record.tokens)
    return { refresh: false, reason: 'disconnected' };
  if (record.tokens.expiresAt <= now) return { refresh: true, reason: 'expired' };
  if (record.tokens.expiresAt - now <= aheadMs) return { refresh: true, reason: 'expiring' };
  return { refresh: false, reason: 'fresh' };
}

/**
 * Whether `record` still needs the refresh `reason` asked for. False when there is nothing left to
 * do: the connection is disconnected, someone already replaced the rejected token (with one not
 * itself due: a failover may roll a record back to an older, expired pair), the rejected token's
 * 401s are held back (`mayRefreshOnRejection`; a call that met its 401 before the hold was
 * written sees it here), or (proactive) the token is no longer near its expiry. Pure; asked again
 * after every wait and re-read, the last time under the refresh lock.
 */
export function stillNeeded(
  record: ConnectionRecord,
  reason: RefreshReason,
  now: number,
  policy: { aheadMs: number; holdMs: number },
): boolean {
  if (record.status !== 'connected' || !record.tokens) return false;
  const due = shouldRefresh(record, now, policy.aheadMs).refresh;
  if (reason.kind === 'proactive') return due;
  return (
    due ||
    (record.tokens.accessToken === reason.accessToken &&
      mayRefreshOnRejection(record, now, policy.holdMs))
  );
}

/**
 * Whether a refresh for `reason` hands back the very token the API rejected on purpose: its 401s
 * are held back, so the call sends it again and passes the API's answer on. Pure.
 */
export function heldBack(
  record: ConnectionRecord,
  reason: RefreshReason,
  now: number,
  holdMs: number,
): boolean {
  return (
    reason.kind === 'rejected' &&
    record.tokens?.accessToken === reason.accessToken &&
    !mayRefreshOnRejection(record, now, holdMs)
  );
}

/**
 * After a refresh that failed or was held back: whether the record's current token may still be
 * used. Only for a proactive refresh, and only while the token has not expired; a token the API
 * rejected is never used again. Pure.
 */
export function stillUsable(record: ConnectionRecord, reason: RefreshReason, now: number): boolean {
  return (
    reason.kind === 'proactive' && record.tokens !== undefined && record.tokens.expiresAt > now
  );
}

/**
 * Whether an upstream 401 to this record's access token may trigger a refresh (the provider's rule:
 * on a 401, refresh once and retry). Always, unless a refresh lately failed to cure a 401 of this
 * connection (`uncuredAt`: the retry with the new token was refused too): that 401 is about the
 * path, not the token, and for `holdMs` after it further 401s are passed on as the license API's
 * answer, so that a path that always answers 401 cannot turn the broker into a refresh pump under
 * the shared client secret. Pure.
 */
export function mayRefreshOnRejection(
  record: ConnectionRecord,
  now: number,
  holdMs: number,
): boolean {
  return record.uncuredAt === undefined || now - record.uncuredAt >= holdMs;
}

/** Refreshes back off from 1 s after a transient failure, doubling to a minute (base/backoff.ts). */
export const REFRESH_BACKOFF: BackoffShape = { firstMs: 1000, maxMs: 60_000 };

/** The wait after `attempts` transient failures, or what the provider asked for if longer. */
export function refreshBackoffMs(attempts: number, retryAfterMs?: number): number {
  return Math.max(backoffMs(attempts, REFRESH_BACKOFF), retryAfterMs ?? 0);
}
