import { describe, expect, it } from 'vitest';
import { trimOldest } from './evicting-map.ts';

describe('trimOldest', () => {
  it('deletes the oldest entries first, and an entry set again counts as new', () => {
    const map = new Map<string, number>();
    for (const key of ['a', 'b', 'c']) map.set(key, 0);
    trimOldest(map, 3);
    expect([...map.keys()]).toEqual(['a', 'b', 'c']);
    map.delete('a');
    map.set('a', 1);
    map.set('d', 0);
    trimOldest(map, 3);
    expect([...map.keys()]).toEqual(['c', 'a', 'd']);
  });

  it('keeps exactly the newest entries through long churn, deletions by others and a clear', () => {
    const map = new Map<number, number>();
    for (let n = 0; n < 50_000; n++) {
      map.set(n, n);
      if (n % 7 === 0) map.delete(n - 3);
      trimOldest(map, 100);
    }
    const kept = [...map.keys()];
    expect(kept.length).toBeLessThanOrEqual(100);
    expect(kept.at(-1)).toBe(49_999);
    expect(kept).toEqual([...kept].sort((a, b) => a - b));
    expect(kept[0]).toBeGreaterThan(49_999 - 120);
    map.clear();
    for (let n = 0; n < 5; n++) map.set(n, n);
    trimOldest(map, 2);
    expect([...map.keys()]).toEqual([3, 4]);
  });
});
