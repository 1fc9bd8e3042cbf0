import { keys } from '../../store/keys.ts';
import type { Store } from '../../store/types.ts';
import { refreshBackoffMs } from './policy.ts';

/**
 * The key of connection `id`'s back-off, named here only: the connection's removal deletes it with
 * the record (records.ts).
 */
export const refreshBackoffKey = (sid: string, id: string): string => keys.backoff(sid, id);

/** A connection's back-off after transient refresh failures: until when, and after how many. */
export interface Backoff {
  until: number;
  attempts: number;
}

/**
 * The refresh back-off of each connection, in the store beside its record (`backoff:<id>`), so
 * that every instance holds back alike: read before a refresh, grown after a transient failure,
 * cleared once a refresh (or a new authorization) succeeds.
 */
export function createRefreshBackoff(deps: { store: Store; now: () => number }) {
  const { store, now } = deps;
  return {
    /** The connection's back-off, or null when it has none. */
    async of(sid: string, id: string): Promise<Backoff | null> {
      const raw = await store.get(refreshBackoffKey(sid, id));
      return raw === null ? null : (JSON.parse(raw) as Backoff);
    },

    /** Whether `backoff` still holds refreshes back now. */
    holds(backoff: Backoff | null): backoff is Backoff {
      return backoff !== null && backoff.until > now();
    },

    /** One more transient failure after `previous`: the back-off grown, stored and answered. */
    async grow(
      sid: string,
      id: string,
      previous: Backoff | null,
      retryAfterMs: number | undefined,
    ): Promise<Backoff> {
      const attempts = (previous?.attempts ?? 0) + 1;
      const next: Backoff = { until: now() + refreshBackoffMs(attempts, retryAfterMs), attempts };
      // Kept a minute past its end: the next failure still counts as the next attempt.
      await store.set(
        refreshBackoffKey(sid, id),
        JSON.stringify(next),
        next.until - now() + 60_000,
      );
      return next;
    },

    clear(sid: string, id: string): Promise<void> {
      return store.del(refreshBackoffKey(sid, id));
    },
  };
}
export type RefreshBackoff = ReturnType<typeof createRefreshBackoff>;
