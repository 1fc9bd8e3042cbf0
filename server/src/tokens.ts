import type { Logger } from 'pino';
import type { ConnectionRecord, ConnectionRepository, LoadedConnection } from './connections.ts';
import { randomToken } from './crypto.ts';
import { BrokerError, notFound } from './errors.ts';
import { keys } from './keys.ts';
import { ProviderError, type Provider } from './provider.ts';
import { isStoreDown } from './store/errors.ts';
import type { Store } from './store/types.ts';
import type { EventSink } from './events.ts';

export type RefreshReason = 'disconnected' | 'fresh' | 'expiring' | 'expired';

/** Whether a connection's access token should be refreshed now, and why. Pure. */
export function shouldRefresh(
  record: ConnectionRecord,
  now: number,
  aheadMs: number,
): { refresh: boolean; reason: RefreshReason } {
  if (record.status !== 'connected' || !record.tokens)
    return { refresh: false, reason: 'disconnected' };
  if (record.tokens.expiresAt <= now) return { refresh: true, reason: 'expired' };
  if (record.tokens.expiresAt - now <= aheadMs) return { refresh: true, reason: 'expiring' };
  return { refresh: false, reason: 'fresh' };
}

/**
 * Whether an upstream 401 to this record's access token may trigger a refresh: not within
 * `minIntervalMs` of its last successful refresh, so that a path that always answers 401 cannot
 * turn the broker into a refresh pump under the shared client secret. Pure.
 */
export function mayRefreshOnRejection(
  record: ConnectionRecord,
  now: number,
  minIntervalMs: number,
): boolean {
  return record.refreshedAt === undefined || now - record.refreshedAt >= minIntervalMs;
}

/** Exponential back-off after transient refresh failures: 1 s, 2 s, 4 s … capped at 60 s. */
export function backoffMs(attempts: number, retryAfterSeconds?: number): number {
  const exponential = Math.min(1000 * 2 ** Math.max(0, attempts - 1), 60_000);
  return Math.max(exponential, (retryAfterSeconds ?? 0) * 1000);
}

export interface TokenServiceDeps {
  store: Store;
  /** Told when a connection is disconnected (default: nobody). */
  events?: EventSink;
  connections: ConnectionRepository;
  provider: Provider;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  log: Logger;
  refreshAheadMs: number;
  /** See mayRefreshOnRejection (default 0: always). */
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

interface Backoff {
  until: number;
  attempts: number;
}

/** The refresh lock a holder took; `kept` hands its release to a write still to come. */
interface Lease {
  key: string;
  owner: string;
  kept: boolean;
}

/** How often a rotated pair the store did not take is offered to it again. */
const STORE_RETRY_MS = 250;

/**
 * Keeps each connection's access token usable, with exactly one refresh per connection at a time
 * across every instance: an in-process single flight, then a Redis lock whose lease outlives the
 * token request, then a re-read (another instance may have refreshed already), then a versioned
 * write of the new pair before anyone uses it.
 */
export function createTokenService(deps: TokenServiceDeps) {
  const { store, connections, provider, now, log } = deps;
  const { leaseMs } = deps;
  const inflight = new Map<string, Promise<LoadedConnection>>();
  const counters: TokenCounters = {
    lockAttempts: 0,
    lockWaits: 0,
    refreshes: 0,
    rejected: 0,
    transient: 0,
    lost: 0,
  };

  /** Already refreshed by someone else, or nothing left to do. */
  const settled = (current: LoadedConnection, failedAccessToken: string | undefined): boolean => {
    const { record } = current;
    if (record.status !== 'connected' || !record.tokens) return true;
    if (failedAccessToken !== undefined) return record.tokens.accessToken !== failedAccessToken;
    return !shouldRefresh(record, now(), deps.refreshAheadMs).refresh;
  };

  const unavailable = (until: number): BrokerError =>
    new BrokerError('upstream_unavailable', 'The provider is not answering; try again shortly.', {
      retryAfter: Math.max(1, Math.ceil((until - now()) / 1000)),
    });

  /** After a failed or skipped refresh: keep using a still-valid token, else answer 503. */
  const fallBack = (
    current: LoadedConnection,
    until: number,
    failedAccessToken: string | undefined,
  ): LoadedConnection => {
    const tokens = current.record.tokens;
    if (failedAccessToken === undefined && tokens && tokens.expiresAt > now()) return current;
    throw unavailable(until);
  };

  async function readBackoff(sid: string, id: string): Promise<Backoff | null> {
    const raw = await store.get(keys.backoff(sid, id));
    return raw === null ? null : (JSON.parse(raw) as Backoff);
  }

  /**
   * Stores a rotated pair the store did not take because it was down: the provider has already
   * used up the old refresh token, so this pair is the only one left. Offered again while the
   * lease lasts; the lock is released only then, so no other holder refreshes with the used token
   * meanwhile. The versioned write keeps whatever someone else stored since.
   */
  async function storeWhenBack(
    sid: string,
    record: ConnectionRecord,
    version: number,
    lease: Lease,
  ): Promise<void> {
    for (let attempt = 0; attempt < Math.ceil(leaseMs / STORE_RETRY_MS); attempt++) {
      await deps.sleep(STORE_RETRY_MS);
      try {
        const written = await connections.save(sid, record, version);
        if (written) await store.del(keys.backoff(sid, record.id));
        await store.deleteIfEquals(lease.key, lease.owner);
        log.warn(
          { connection: record.id, written },
          'the store answered again; stored the rotated pair unless a newer one was there',
        );
        return;
      } catch (error) {
        if (!isStoreDown(error)) {
          log.error({ err: error, connection: record.id }, 'could not store a rotated pair');
          return;
        }
      }
    }
    log.error(
      { connection: record.id },
      'the store stayed down for the whole lease; a rotated pair is lost',
    );
  }

  async function refreshHoldingLock(
    sid: string,
    id: string,
    failedAccessToken: string | undefined,
    lease: Lease,
  ): Promise<LoadedConnection> {
    const current = await connections.load(sid, id);
    if (!current) throw notFound('Connection');
    const { record } = current;
    if (settled(current, failedAccessToken) || !record.tokens) return current;
    const backoff = await readBackoff(sid, id);
    if (backoff && backoff.until > now())
      return fallBack(current, backoff.until, failedAccessToken);

    try {
      const tokens = await provider.refresh(record.apiUrl, record.tokens.refreshToken);
      counters.refreshes++;
      const next: ConnectionRecord = { ...record, tokens, refreshedAt: now() };
      delete next.refreshLost;
      const saved = await connections.save(sid, next, current.version).catch((error: unknown) => {
        if (isStoreDown(error)) {
          lease.kept = true;
          void storeWhenBack(sid, next, current.version, lease);
        }
        throw error;
      });
      if (!saved) {
        // Only a holder whose lease ran out gets here: a newer pair is stored; keep that one.
        log.warn({ connection: id }, 'refresh finished after its lease; keeping the newer pair');
        return (await connections.load(sid, id)) ?? current;
      }
      if (backoff) await store.del(keys.backoff(sid, id));
      log.info({ connection: id, reason: 'rotated' }, 'refreshed access token');
      return { record: next, version: current.version + 1 };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      counters[error.failure]++;
      if (error.failure === 'rejected') return disconnect(sid, current, error);
      // A holder that outlived its lease (paused, say) while another instance stored a newer
      // state reports nothing: the newer state stands, and no back-off of ours holds it back.
      const latest = await connections.load(sid, id);
      if (latest && latest.version !== current.version) {
        log.warn({ connection: id, failure: error.failure }, 'refresh failed after its lease');
        return settled(latest, failedAccessToken)
          ? latest
          : fallBack(latest, now() + 1000, failedAccessToken);
      }
      const attempts = (backoff?.attempts ?? 0) + 1;
      const until = now() + backoffMs(attempts, error.retryAfter);
      await store.set(
        keys.backoff(sid, id),
        JSON.stringify({ until, attempts } satisfies Backoff),
        until - now() + 60_000,
      );
      if (error.failure === 'lost' && !record.refreshLost) {
        await connections.save(sid, { ...record, refreshLost: true }, current.version);
      }
      log.warn(
        { connection: id, failure: error.failure, status: error.status, retryInMs: until - now() },
        'refresh failed; backing off',
      );
      return fallBack(current, until, failedAccessToken);
    }
  }

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
    if (!(await connections.save(sid, next, current.version))) {
      return (await connections.load(sid, record.id)) ?? current;
    }
    await store.del(keys.backoff(sid, record.id));
    log.warn(
      { connection: record.id, status: error.status, reason: next.disconnectedReason },
      'provider rejected the refresh; connection disconnected',
    );
    deps.events?.emit({
      type: 'connection.disconnected',
      connection: {
        id: record.id,
        api_origin: new URL(record.apiUrl).origin,
        reason,
      },
    });
    return { record: next, version: current.version + 1 };
  }

  async function refreshAcrossInstances(
    sid: string,
    loaded: LoadedConnection,
    failedAccessToken: string | undefined,
  ): Promise<LoadedConnection> {
    const id = loaded.record.id;
    const lockKey = keys.refreshLock(sid, id);
    const deadline = now() + leaseMs + deps.tokenTimeoutMs;
    for (;;) {
      const owner = randomToken(16);
      counters.lockAttempts++;
      if (await store.setIfAbsent(lockKey, owner, leaseMs)) {
        const lease: Lease = { key: lockKey, owner, kept: false };
        try {
          return await refreshHoldingLock(sid, id, failedAccessToken, lease);
        } finally {
          if (!lease.kept)
            await store.deleteIfEquals(lockKey, owner).catch((error: unknown) => {
              log.warn({ err: error, connection: id }, 'could not release the refresh lock');
            });
        }
      }
      // Another instance is refreshing: wait for it to finish, then use what it stored.
      counters.lockWaits++;
      while ((await store.get(lockKey)) !== null) {
        if (now() > deadline) throw unavailable(now() + 1000);
        await deps.sleep(10);
      }
      const current = await connections.load(sid, id);
      if (!current) throw notFound('Connection');
      if (settled(current, failedAccessToken)) return current;
      const backoff = await readBackoff(sid, id);
      if (backoff && backoff.until > now())
        return fallBack(current, backoff.until, failedAccessToken);
      if (now() > deadline) throw unavailable(now() + 1000);
    }
  }

  return {
    counters,

    /** Whether an upstream 401 to `record`'s access token may refresh it (else pass the 401 on). */
    mayRefreshOnRejection: (record: ConnectionRecord): boolean =>
      mayRefreshOnRejection(record, now(), deps.refreshMinIntervalMs ?? 0),

    /** Resolves once every refresh this instance has started has finished (for shutdown). */
    async idle(): Promise<void> {
      while (inflight.size > 0) await Promise.allSettled([...inflight.values()]);
    },

    /**
     * A connection whose access token can be used now. `failedAccessToken`: the upstream just
     * answered 401 to this token, so refresh unless someone already replaced it.
     */
    async usable(
      sid: string,
      loaded: LoadedConnection,
      failedAccessToken?: string,
    ): Promise<LoadedConnection> {
      if (settled(loaded, failedAccessToken)) return loaded;
      const flightKey = `${sid}:${loaded.record.id}`;
      let flight = inflight.get(flightKey);
      if (!flight) {
        flight = refreshAcrossInstances(sid, loaded, failedAccessToken).finally(() =>
          inflight.delete(flightKey),
        );
        inflight.set(flightKey, flight);
      }
      const result = await flight;
      if (
        failedAccessToken !== undefined &&
        result.record.tokens?.accessToken === failedAccessToken
      )
        throw unavailable(now() + 1000);
      return result;
    },
  };
}
export type TokenService = ReturnType<typeof createTokenService>;
