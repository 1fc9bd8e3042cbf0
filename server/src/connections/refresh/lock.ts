import { randomToken } from '../../base/crypto.ts';
import type { Store } from '../../store/types.ts';

/** A refresh lock this process took; `kept` hands its release to a write still to come. */
export interface Lease {
  readonly key: string;
  readonly owner: string;
  kept: boolean;
}

export interface RefreshLockDeps {
  store: Store;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** How long a lease lasts: longer than the token request it guards, so it outlives it. */
  leaseMs: number;
}

/** How often a waiter looks whether the holder has released the lock. */
const POLL_MS = 10;

/**
 * The cross-instance refresh lock of one connection: `SET NX PX` with an owner token, released by
 * compare-and-delete, so only its owner releases it and a holder that dies leaves a lease that runs
 * out on its own.
 */
export function createRefreshLock(deps: RefreshLockDeps) {
  const { store, leaseMs } = deps;
  return {
    leaseMs,

    /** The lease, or null when another holder has it. */
    async acquire(key: string): Promise<Lease | null> {
      const owner = randomToken(16);
      return (await store.setIfAbsent(key, owner, leaseMs)) ? { key, owner, kept: false } : null;
    },

    /** Release a lease still ours (a lease that ran out and was taken by another stays theirs). */
    async release(lease: Lease): Promise<void> {
      await store.deleteIfEquals(lease.key, lease.owner);
    },

    /**
     * Wait for whoever holds `key` to release it (or for the lease to run out). False when
     * `deadline` passed first.
     */
    async released(key: string, deadline: number): Promise<boolean> {
      while ((await store.get(key)) !== null) {
        if (deps.now() > deadline) return false;
        await deps.sleep(POLL_MS);
      }
      return true;
    },
  };
}
export type RefreshLock = ReturnType<typeof createRefreshLock>;
