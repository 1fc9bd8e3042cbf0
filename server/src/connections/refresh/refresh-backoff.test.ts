import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../store/memory.ts';
import { createRefreshBackoff } from './refresh-backoff.ts';

const NOW = 1_700_000_000_000;

describe('a refresh back-off', () => {
  it('ends on the store’s clock, whatever the clock of the instance that wrote it (50 s ahead here)', async () => {
    let storeNow = NOW;
    const store = createMemoryStore(() => storeNow);
    const ahead = createRefreshBackoff({ store, now: () => storeNow + 50_000 });
    const onTime = createRefreshBackoff({ store, now: () => storeNow });
    const written = await ahead.grow('sid', 'c1', null, undefined);
    expect(written.until - (storeNow + 50_000)).toBe(1000);
    expect(onTime.holds(await onTime.of('sid', 'c1'))).toBe(true);
    storeNow += 1001;
    const after = await onTime.of('sid', 'c1');
    expect(onTime.holds(after)).toBe(false);
    // Kept a minute past its end: the next failure counts as the second.
    expect(after?.attempts).toBe(1);
    expect((await onTime.grow('sid', 'c1', after, undefined)).until).toBe(storeNow + 2000);
  });

  it('says when it ends on the reader’s clock, for Retry-After', async () => {
    const store = createMemoryStore(() => NOW);
    const backoffs = createRefreshBackoff({ store, now: () => NOW - 30_000 });
    await backoffs.grow('sid', 'c1', null, 4000);
    expect((await backoffs.of('sid', 'c1'))?.until).toBe(NOW - 30_000 + 4000);
  });
});
