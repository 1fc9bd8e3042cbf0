import { randomToken } from '../base/crypto.ts';
import type { Store } from './types.ts';

/** A lease this process holds: the key, and the owner token only it knows. */
export interface Lease {
  readonly key: string;
  readonly owner: string;
}

/**
 * Leases in the store: a key one owner holds for a while. Taken with SET NX PX and an owner token;
 * renewed and released only while still that owner's (each an atomic compare in the store), so a
 * holder that stalled past its lease never renews or releases the next holder's, and a holder that
 * dies leaves a lease that runs out on its own. The broker's one lease: the refresh lock of a
 * connection, the delivery of a session's events, the instance that reports store-wide gauges.
 */
export function createLeases(store: Store) {
  return {
    /** The lease of `key` for `ms`, or null while another holds it; `owner` is random unless given. */
    async take(key: string, ms: number, owner = randomToken(16)): Promise<Lease | null> {
      return (await store.setIfAbsent(key, owner, ms)) ? { key, owner } : null;
    },

    /** Another `ms` for a lease still ours; false when it ran out (another may hold it now). */
    renew(lease: Lease, ms: number): Promise<boolean> {
      return store.expireIfEquals(lease.key, lease.owner, ms);
    },

    /** Let go of a lease still ours (one that ran out and was taken since stays its holder's). */
    release(lease: Lease): Promise<boolean> {
      return store.deleteIfEquals(lease.key, lease.owner);
    },

    /** Whether anyone holds `key` now. */
    async held(key: string): Promise<boolean> {
      return (await store.get(key)) !== null;
    },
  };
}
export type Leases = ReturnType<typeof createLeases>;
