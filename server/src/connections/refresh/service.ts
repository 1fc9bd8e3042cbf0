import { inSpan } from '../../base/tracing.ts';
import type { Logger } from 'pino';
import type { ConnectionRecord, ConnectionRepository, LoadedConnection } from '../records.ts';
import { BrokerError, notFound } from '../../base/errors.ts';
import { ProviderError, type Provider } from '../../oauth/provider.ts';
import type { Store } from '../../store/types.ts';
import { createRefreshBackoff, type Backoff } from './refresh-backoff.ts';
import { createRefreshLock, refreshLockKey, type HeldLock } from './lock.ts';
import { createRefreshOutcomes } from './outcomes.ts';
import { createRotatedPairs } from './rotated.ts';
import {
  heldBack,
  mayRefreshOnRejection as refreshOnRejection,
  PROACTIVE,
  stillNeeded,
  stillUsable,
  type RefreshReason,
} from './policy.ts';

export interface TokenServiceDeps {
  store: Store;
  connections: ConnectionRepository;
  provider: Provider;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  log: Logger;
  refreshAheadMs: number;
  /** How long 401s are passed on after a refresh did not cure one (mayRefreshOnRejection). */
  refreshMinIntervalMs?: number;
  /** Bound on one token request. */
  tokenTimeoutMs: number;
  /** Lease of the refresh lock: longer than tokenTimeoutMs, it outlives the request it guards. */
  leaseMs: number;
}

export interface TokenCounters {
  lockAttempts: number;
  /** Times a caller found the lock held by another and waited for it. */
  lockWaits: number;
  refreshes: number;
  rejected: number;
  transient: number;
  lost: number;
}

/**
 * Keeps each connection's access token usable, with exactly one refresh per connection at a time
 * across every instance. A refresh goes through these steps, each in its own function below:
 *
 * 1. `usable`: nothing to do (`stillNeeded` says so), or join this process's flight for the
 *    connection (single flight), or start one.
 * 2. `acrossInstances`: take the Redis lock; or, ahead of expiry, use the token in hand; or wait
 *    for its holder, re-read, and go on only if the refresh is still needed and no back-off holds
 *    it back.
 * 3. `holdingLock`: re-read (another instance may have refreshed already), honour a back-off,
 *    then ask the provider.
 * 4. The provider's answer: `rotated` (a versioned write of the new pair before anyone uses it;
 *    if the store is down, `storeWhenBack` keeps the lock and offers it again), `disconnect`
 *    (rejected), or `backOff` (transient, or the answer was lost).
 *
 * After a failed or held-back refresh, a proactive one falls back on the still-valid token; a
 * rejected token is never used again: 503 with Retry-After.
 */
export function createTokenService(deps: TokenServiceDeps) {
  const { connections, provider, now, log } = deps;
  const lock = createRefreshLock(deps);
  const backoffs = createRefreshBackoff(deps);
  const rotatedPairs = createRotatedPairs({ ...deps, lock, backoffs });
  // Counted in the store too: the admin overview's outcomes of the last hour, fleet-wide.
  const outcomes = createRefreshOutcomes(deps);
  const inflight = new Map<string, Promise<LoadedConnection>>();
  /** Locks kept after a refresh made for a 401, until a retry with the new token is answered. */
  const awaitingRetry = new Map<string, { accessToken: string; lease: HeldLock }>();
  const counters: TokenCounters = {
    lockAttempts: 0,
    lockWaits: 0,
    refreshes: 0,
    rejected: 0,
    transient: 0,
    lost: 0,
  };

  const holdMs = deps.refreshMinIntervalMs ?? 0;
  const mayRefreshOnRejection = (record: ConnectionRecord): boolean =>
    refreshOnRejection(record, now(), holdMs);
  const needed = (current: LoadedConnection, reason: RefreshReason): boolean =>
    stillNeeded(current.record, reason, now(), { aheadMs: deps.refreshAheadMs, holdMs });

  const unavailable = (until: number): BrokerError =>
    new BrokerError('upstream_unavailable', 'The provider is not answering; try again shortly.', {
      retryAfter: Math.max(1, Math.ceil((until - now()) / 1000)),
    });

  /** After a failed or skipped refresh: keep using a still-valid token, else answer 503. */
  const fallBack = (
    current: LoadedConnection,
    until: number,
    reason: RefreshReason,
  ): LoadedConnection => {
    if (stillUsable(current.record, reason, now())) return current;
    throw unavailable(until);
  };

  async function loadOrNotFound(sid: string, id: string): Promise<LoadedConnection> {
    const current = await connections.load(sid, id);
    if (!current) throw notFound('Connection');
    return current;
  }

  /** Step 2: the lock, or a wait for its holder and a fresh look. */
  async function acrossInstances(
    sid: string,
    loaded: LoadedConnection,
    reason: RefreshReason,
  ): Promise<LoadedConnection> {
    const { id } = loaded.record;
    let seen = loaded;
    const key = refreshLockKey(sid, id);
    const deadline = now() + lock.leaseMs + deps.tokenTimeoutMs;
    for (;;) {
      counters.lockAttempts++;
      const lease = await lock.acquire(key);
      if (lease) {
        try {
          return await holdingLock(sid, id, reason, lease);
        } finally {
          if (!lease.kept) await letGo(lease, id);
        }
      }
      // Another instance is refreshing. Ahead of expiry, the token in hand is still good: used
      // as it is, so a holder that died or stalled (until its lease ends) costs this call nothing.
      if (stillUsable(seen.record, reason, now())) return seen;
      // Else wait for it to finish, then use what it stored.
      counters.lockWaits++;
      if (!(await inSpan('baton.refresh.lock_wait', () => lock.released(key, deadline))))
        throw unavailable(now() + 1000);
      seen = await loadOrNotFound(sid, id);
      if (!needed(seen, reason)) return seen;
      const backoff = await backoffs.of(sid, id);
      if (backoffs.holds(backoff)) return fallBack(seen, backoff.until, reason);
      if (now() > deadline) throw unavailable(now() + 1000);
    }
  }

  /** Step 3: holding the lock, re-read and ask the provider if still needed. */
  async function holdingLock(
    sid: string,
    id: string,
    reason: RefreshReason,
    lease: HeldLock,
  ): Promise<LoadedConnection> {
    const current = await loadOrNotFound(sid, id);
    const { tokens } = current.record;
    if (!needed(current, reason) || !tokens) return current;
    const backoff = await backoffs.of(sid, id);
    if (backoffs.holds(backoff)) return fallBack(current, backoff.until, reason);
    try {
      const rotated = await provider.refresh(current.record.apiUrl, tokens.refreshToken);
      counters.refreshes++;
      const result = await rotatedPairs.store(sid, current, rotated, lease);
      // Counted once the pair is stored, never on the way to storing it.
      void outcomes.count('refreshed');
      if (result.record.tokens !== rotated) return result;
      if (backoff) await backoffs.clear(sid, current.record.id);
      // A pair that arrived expired (its holder paused past the token's life) gets no retry.
      if (reason.kind === 'rejected' && rotated.expiresAt > now())
        keepForRetry(sid, id, rotated.accessToken, lease);
      return result;
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      counters[error.failure]++;
      void outcomes.count(error.failure);
      if (error.failure === 'rejected') return disconnect(sid, current, error);
      return backOff(sid, current, error, backoff, reason);
    }
  }

  /**
   * A refresh made for a 401 keeps the lock until a retry with its new token is answered
   * (`retried`): a 401 to that token met meanwhile by another call, here or on another instance,
   * is then judged once that answer is in. Refused too, the refresh did not cure the 401 and the
   * hold is written before the lock goes, so that call refreshes nothing; else it refreshes, as
   * the provider's rule says. Unanswered, the lease runs out by itself.
   */
  function keepForRetry(sid: string, id: string, accessToken: string, lease: HeldLock): void {
    if (lease.kept) return;
    lease.kept = true;
    const key = `${sid}:${id}`;
    const before = awaitingRetry.get(key);
    awaitingRetry.set(key, { accessToken, lease });
    if (before) void letGo(before.lease, id);
  }

  async function letGo(lease: HeldLock, id: string): Promise<void> {
    await lock.release(lease).catch((error: unknown) => {
      log.warn(
        { err: error, connection: id },
        'could not release the refresh lock; offered again while its lease lasts',
      );
    });
  }

  /** Step 4, transient or lost: back off, unless a newer state was stored meanwhile. */
  async function backOff(
    sid: string,
    current: LoadedConnection,
    error: ProviderError,
    backoff: Backoff | null,
    reason: RefreshReason,
  ): Promise<LoadedConnection> {
    const { record } = current;
    // A holder that outlived its lease (paused, say) while another instance stored a newer state
    // reports nothing: the newer state stands, and no back-off of ours holds it back.
    const latest = await connections.load(sid, record.id);
    if (latest && latest.version !== current.version) {
      log.warn({ connection: record.id, failure: error.failure }, 'refresh failed after its lease');
      return needed(latest, reason) ? fallBack(latest, now() + 1000, reason) : latest;
    }
    const { until } = await backoffs.grow(sid, record.id, backoff, error.retryAfterMs);
    if (error.failure === 'lost' && !record.refreshLost) {
      await connections.save(sid, { ...record, refreshLost: true }, current.version);
    }
    log.warn(
      {
        connection: record.id,
        failure: error.failure,
        status: error.status,
        retryInMs: until - now(),
      },
      'refresh failed; backing off',
    );
    return fallBack(current, until, reason);
  }

  /** Step 4, rejected: the grant is gone; the connection is disconnected, its tokens deleted. */
  async function disconnect(
    sid: string,
    current: LoadedConnection,
    error: ProviderError,
  ): Promise<LoadedConnection> {
    const { record } = current;
    const reason = record.refreshLost ? 'refresh_response_lost' : 'refresh_rejected';
    const next: ConnectionRecord = {
      id: record.id,
      apiUrl: record.apiUrl,
      connectedAt: record.connectedAt,
      status: 'disconnected',
      disconnectedReason: reason,
    };
    const event = {
      type: 'connection.disconnected',
      connection: { id: record.id, api_origin: new URL(record.apiUrl).origin, reason },
    } as const;
    // The event is recorded with the write that disconnects (connections.save): only once.
    if (!(await connections.save(sid, next, current.version, event))) {
      return (await connections.load(sid, record.id)) ?? current;
    }
    await backoffs.clear(sid, record.id);
    log.warn(
      { connection: record.id, status: error.status, reason: next.disconnectedReason },
      'provider rejected the refresh; connection disconnected',
    );
    return { record: next, version: current.version + 1 };
  }

  /**
   * Step 1: a connection whose access token can be used now, refreshed first when `reason` still
   * calls for it; one flight per connection in this process.
   */
  async function usable(
    sid: string,
    loaded: LoadedConnection,
    reason: RefreshReason = PROACTIVE,
  ): Promise<LoadedConnection> {
    if (!needed(loaded, reason)) return loaded;
    const flightKey = `${sid}:${loaded.record.id}`;
    const joined = inflight.get(flightKey);
    if (joined) {
      const result = await joined;
      // A flight started for another reason (proactive, or the rejection of an older token) can
      // hand back the very token this call saw rejected, stored meanwhile: refresh that one too.
      if (reason.kind === 'rejected' && needed(result, reason)) return usable(sid, result, reason);
      return result;
    }
    // The kind only: a `rejected` reason carries the access token.
    const flight = inSpan('baton.refresh', () => acrossInstances(sid, loaded, reason), {
      'baton.refresh.reason': reason.kind,
    }).finally(() => inflight.delete(flightKey));
    inflight.set(flightKey, flight);
    const result = await flight;
    // A pair that arrived already expired would only meet a 401 again, taken for the path's: it
    // is refreshed once more (its refresh token is the newest) before the retry.
    const got = result.record.tokens;
    if (reason.kind !== 'rejected' || !got) return result;
    if (got.accessToken !== reason.accessToken && got.expiresAt <= now())
      return usable(sid, result, { kind: 'rejected', accessToken: got.accessToken });
    // Never hand back a token the API rejected, unless its 401s are held back: then the call
    // sends it again and passes the API's answer on.
    if (got.accessToken === reason.accessToken && !heldBack(result.record, reason, now(), holdMs))
      throw unavailable(now() + 1000);
    return result;
  }

  return {
    counters,

    /** Resolves once every refresh this instance has started has finished (for shutdown). */
    async idle(): Promise<void> {
      while (inflight.size > 0) await Promise.allSettled([...inflight.values()]);
    },

    /** Whether an upstream 401 to `record`'s access token may refresh it (else pass the 401 on). */
    mayRefreshOnRejection,

    /**
     * The retry with `loaded`'s refreshed token was answered `status` (0: not at all). A 401 means
     * the refresh did not cure the 401: it is about the path, not the token, and for the budget's
     * window further 401s of this connection are passed on (mayRefreshOnRejection). That hold is a
     * versioned write; whoever wrote first (another call held it back, or refreshed) wins. Then
     * the refresh lock goes, if this instance kept it for this answer (keepForRetry).
     */
    async retried(sid: string, loaded: LoadedConnection, status: number): Promise<void> {
      const { id, tokens } = loaded.record;
      const key = `${sid}:${id}`;
      const kept = awaitingRetry.get(key);
      const mine = kept?.accessToken === tokens?.accessToken ? kept : undefined;
      if (mine) awaitingRetry.delete(key);
      try {
        if (status !== 401 || !mayRefreshOnRejection(loaded.record)) return;
        const next: ConnectionRecord = { ...loaded.record, uncuredAt: now() };
        if (await connections.save(sid, next, loaded.version))
          log.warn(
            { connection: id, holdMs },
            'a refresh did not cure a 401 from the license API: its 401s are passed on for a while',
          );
      } finally {
        if (mine) await letGo(mine.lease, id);
      }
    },

    usable,
  };
}
export type TokenService = ReturnType<typeof createTokenService>;
