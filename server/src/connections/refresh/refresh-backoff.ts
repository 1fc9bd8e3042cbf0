import { keys } from '../../store/keys.ts';
import type { Store } from '../../store/types.ts';
import { refreshBackoffMs } from './policy.ts';

/**
 * The key of connection `id`'s back-off, named here only: the connection's removal deletes it with
 * the record (records.ts).
 */
export const refreshBackoffKey = (sid: string, id: string): string => keys.backoff(sid, id);

/** A connection's back-off after transient refresh failures: until when (on the reader's clock), and after how many. */
export interface Backoff {
  until: number;
  attempts: number;
}

/** How long a back-off's key outlives its end: the next failure still counts as the next attempt. */
const KEEP_MS = 60_000;

/**
 * The refresh back-off of each connection, in the store beside its record (`backoff:<id>`), so
 * that every instance holds back alike: read before a refresh, grown after a transient failure,
 * cleared once a refresh (or a new authorization) succeeds. It ends at the earlier of the end its
 * writer gave it and the end its key's time to live says (less KEEP_MS), on the store's clock, the
 * one every instance shares: so a writer whose clock ran 50 s ahead no longer holds every other
 * instance back 50 s more (the soak's clock jump during a token endpoint's 503s); one whose clock
 * is behind ends it early, which costs one refresh attempt sooner.
 */
export function createRefreshBackoff(deps: { store: Store; now: () => number }) {
  const { store, now } = deps;
  return {
    /** The connection's back-off, or null when it has none. */
    async of(sid: string, id: string): Promise<Backoff | null> {
      const read = await store.getWithTtl(refreshBackoffKey(sid, id));
      if (read === null) return null;
      const { attempts, until } = JSON.parse(read.value) as Backoff;
      return { attempts, until: Math.min(until, now() + read.ttlMs - KEEP_MS) };
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
      const waitMs = refreshBackoffMs(attempts, retryAfterMs);
      const next: Backoff = { until: now() + waitMs, attempts };
      await store.set(refreshBackoffKey(sid, id), JSON.stringify(next), waitMs + KEEP_MS);
      return next;
    },

    clear(sid: string, id: string): Promise<void> {
      return store.del(refreshBackoffKey(sid, id));
    },
  };
}
export type RefreshBackoff = ReturnType<typeof createRefreshBackoff>;
