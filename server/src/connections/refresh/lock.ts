import { isStoreDown } from '../../store/errors.ts';
import { keys } from '../../store/keys.ts';
import { createLeases, type Lease } from '../../store/lease.ts';
import type { Store } from '../../store/types.ts';

/** A refresh lock this process took; `kept` hands its release to a write still to come. */
export interface HeldLock {
  readonly lease: Lease;
  /** When it was taken, on this process's clock: its lease ends `leaseMs` later. */
  readonly takenAt: number;
  kept: boolean;
}

export interface RefreshLockDeps {
  store: Store;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** How long a lease lasts: longer than the token request it guards, so it outlives it. */
  leaseMs: number;
}

/**
 * The key of connection `id`'s refresh lock, named here only: the token service takes it, and the
 * connection's removal deletes it with the record (records.ts).
 */
export const refreshLockKey = (sid: string, id: string): string => keys.refreshLock(sid, id);

/** How often a waiter looks whether the holder has released the lock. */
const POLL_MS = 10;
/** How often a release the store did not take is offered again. */
const RELEASE_RETRY_MS = 250;

/**
 * The cross-instance refresh lock of one connection: a lease (store/lease.ts) that outlives the
 * token request it guards, and a wait for whoever holds it.
 */
export function createRefreshLock(deps: RefreshLockDeps) {
  const { leaseMs } = deps;
  const leases = createLeases(deps.store);

  async function releaseWhenBack(held: HeldLock): Promise<void> {
    for (;;) {
      await deps.sleep(RELEASE_RETRY_MS);
      if (deps.now() >= held.takenAt + leaseMs) return;
      try {
        await leases.release(held.lease);
        return;
      } catch (error) {
        if (!isStoreDown(error)) return;
      }
    }
  }

  return {
    leaseMs,

    /** The lock, or null when another holder has it. */
    async acquire(key: string): Promise<HeldLock | null> {
      const takenAt = deps.now();
      const lease = await leases.take(key, leaseMs);
      return lease ? { lease, takenAt, kept: false } : null;
    },

    /**
     * Release a lock still ours (one that ran out and was taken by another stays theirs). When the
     * store is away (a failover), it rejects, and the release is offered again until the store
     * takes it or the lease has ended: the others do not wait out the lease for a lock let go.
     */
    async release(held: HeldLock): Promise<void> {
      try {
        await leases.release(held.lease);
      } catch (error) {
        if (isStoreDown(error)) void releaseWhenBack(held);
        throw error;
      }
    },

    /**
     * Wait for whoever holds `key` to release it (or for the lease to run out). False when
     * `deadline` passed first.
     */
    async released(key: string, deadline: number): Promise<boolean> {
      while (await leases.held(key)) {
        if (deps.now() > deadline) return false;
        await deps.sleep(POLL_MS);
      }
      return true;
    },
  };
}
export type RefreshLock = ReturnType<typeof createRefreshLock>;
