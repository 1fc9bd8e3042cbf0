import { keys } from '../../store/keys.ts';
import type { Store } from '../../store/types.ts';

/** How a refresh ended: a pair stored, refused for good, failed for now, or its answer lost. */
export const REFRESH_OUTCOMES = ['refreshed', 'rejected', 'transient', 'lost'] as const;
export type RefreshOutcome = (typeof REFRESH_OUTCOMES)[number];

const MINUTE_MS = 60_000;
/** Counted over this many minutes (the admin overview's "last hour"). */
export const OUTCOME_WINDOW_MINUTES = 60;
/** A minute's counters outlive the window a little: a reader's clock may run behind the writer's. */
const KEEP_MS = (OUTCOME_WINDOW_MINUTES + 5) * MINUTE_MS;

/**
 * Refresh outcomes across every instance, in per-minute counters in the store (one INCR a refresh;
 * a refresh is at most one an hour a connection): the metrics' counters are per instance, and an
 * operator asks about the whole fleet. Counting is best effort: a store that is down loses the
 * count, never the refresh.
 */
export function createRefreshOutcomes(deps: { store: Store; now: () => number }) {
  const { store, now } = deps;
  const minute = () => Math.floor(now() / MINUTE_MS);
  return {
    /** Never rejects: the refresh it counts does not wait for it, nor fail with it. */
    async count(outcome: RefreshOutcome): Promise<void> {
      await store.counterAdd(keys.refreshOutcomes(outcome, minute()), 1, KEEP_MS).catch(() => {});
    },

    /** Each outcome over the last OUTCOME_WINDOW_MINUTES minutes, this one included. */
    async lastHour(): Promise<Record<RefreshOutcome, number>> {
      const last = minute();
      const minutes = Array.from({ length: OUTCOME_WINDOW_MINUTES }, (_, n) => last - n);
      const sums = await Promise.all(
        REFRESH_OUTCOMES.map(async (outcome) => {
          const each = await Promise.all(
            minutes.map((at) => store.get(keys.refreshOutcomes(outcome, at))),
          );
          return each.reduce((sum, value) => sum + Number(value ?? 0), 0);
        }),
      );
      const [refreshed = 0, rejected = 0, transient = 0, lost = 0] = sums;
      return { refreshed, rejected, transient, lost };
    },
  };
}
export type RefreshOutcomes = ReturnType<typeof createRefreshOutcomes>;
