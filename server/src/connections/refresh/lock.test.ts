import { describe, expect, it } from 'vitest';
import { keys } from '../../store/keys.ts';
import { createMemoryStore } from '../../store/memory.ts';
import { StoreUnavailableError, type Store } from '../../store/types.ts';
import { createRefreshLock, refreshLockKey } from './lock.ts';

const NOW = 1_700_000_000_000;

/** The embedded store, failing as an unreachable Redis does while `down` is set. */
function reachable() {
  const inner = createMemoryStore(() => now);
  let now = NOW;
  const state = { down: false };
  const store = new Proxy(inner, {
    get(target, property: keyof Store) {
      const method = target[property] as (...args: unknown[]) => Promise<unknown>;
      return async (...args: unknown[]) => {
        if (state.down) throw new StoreUnavailableError('Redis did not answer');
        return method.apply(target, args);
      };
    },
  });
  return { store, state, inner, advance: (ms: number) => (now += ms), now: () => now };
}

/** A lock taken, then released while the store was away: the release rejected. */
async function releasedWhileDown() {
  const world = reachable();
  const sleeps: (() => void)[] = [];
  const lock = createRefreshLock({
    store: world.store,
    now: world.now,
    sleep: () => new Promise<void>((resolve) => sleeps.push(resolve)),
    leaseMs: 6500,
  });
  const held = (await lock.acquire(refreshLockKey('sid', 'c1')))!;
  world.state.down = true;
  await expect(lock.release(held)).rejects.toBeInstanceOf(StoreUnavailableError);
  return { ...world, sleeps };
}

describe('the refresh lock', () => {
  it('a release the store did not take (a failover) is made once it answers again, not left to the lease', async () => {
    const { state, inner, sleeps } = await releasedWhileDown();
    state.down = false;
    sleeps.splice(0).forEach((wake) => wake());
    await new Promise((resolve) => setImmediate(resolve));
    expect(await inner.get(keys.refreshLock('sid', 'c1'))).toBeNull();
  });

  it('lets go of nothing once the lease has ended: another holder may have the lock', async () => {
    const { advance, sleeps } = await releasedWhileDown();
    advance(6501);
    sleeps.splice(0).forEach((wake) => wake());
    await new Promise((resolve) => setImmediate(resolve));
    expect(sleeps).toEqual([]);
  });
});
