import { describe, expect, it } from 'vitest';
import { KeyedBuckets } from './limits.ts';

describe('KeyedBuckets', () => {
  const buckets = (limit = 3, maxKeys?: number) => {
    let now = 0;
    const limiter = new KeyedBuckets({
      limit,
      windowMs: 60_000,
      now: () => now,
      ...(maxKeys === undefined ? {} : { maxKeys }),
    });
    return { limiter, advance: (ms: number) => (now += ms) };
  };

  it('lets `limit` through, then says how long until the next', () => {
    const { limiter } = buckets();
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(20_000);
    expect(limiter.wait('a')).toBe(20_000);
  });

  it('refills continuously, and keeps keys apart', () => {
    const { limiter, advance } = buckets();
    for (let i = 0; i < 3; i++) limiter.take('a');
    expect(limiter.take('b')).toBe(0);
    advance(19_999);
    expect(limiter.take('a')).toBe(1);
    advance(1);
    expect(limiter.take('a')).toBe(0);
  });

  it('forgets a bucket once it is full again, and never keeps more than maxKeys', () => {
    const { limiter, advance } = buckets(3, 2);
    limiter.take('a');
    limiter.take('b');
    limiter.take('c');
    expect(limiter.size).toBe(2);
    advance(60_000);
    expect(limiter.wait('b')).toBe(0);
    expect(limiter.wait('c')).toBe(0);
    expect(limiter.size).toBe(0);
  });

  it('gives a bucket full again its whole limit once more', () => {
    const { limiter, advance } = buckets();
    limiter.take('a');
    advance(60_000);
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(20_000);
    expect(limiter.size).toBe(1);
  });

  it('forgets, a window later, the buckets of keys that never came back', () => {
    const { limiter, advance } = buckets();
    limiter.take('a');
    limiter.take('b');
    advance(50_000);
    limiter.take('c');
    expect(limiter.size).toBe(3);
    advance(10_000);
    expect(limiter.wait('d')).toBe(0);
    expect(limiter.size).toBe(1);
    expect([limiter.take('c'), limiter.take('c'), limiter.take('c')]).toEqual([0, 0, 10_000]);
  });
});
