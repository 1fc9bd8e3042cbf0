import { describe, expect, it } from 'vitest';
import { backoffMs } from './backoff.ts';
import { retryAfterMs } from './retry-after.ts';

const T0 = Date.UTC(2026, 10, 1, 9, 0);
const HOUR = 3600 * 1000;

describe('backoffMs', () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [7, 60_000],
    [40, 60_000],
  ])('a refresh after %s failures waits %s ms (1 s doubling to a minute)', (attempt, wait) => {
    expect(backoffMs(attempt, { firstMs: 1000, maxMs: 60_000 })).toBe(wait);
  });

  it('an event delivery doubles from 5 s to an hour, with jitter between half and all of it', () => {
    const delivery = { firstMs: 5000, maxMs: HOUR };
    expect(backoffMs(1, delivery, 0)).toBe(2500);
    expect(backoffMs(1, delivery, 0.999_999)).toBe(5000);
    expect(backoffMs(4, delivery, 0.5)).toBe(30_000);
    expect(backoffMs(30, delivery, 0.5)).toBe(0.75 * HOUR);
  });
});

describe('retryAfterMs', () => {
  it.each([
    ['30', 30_000],
    [' 30 ', 30_000],
    ['0', 1000],
    [new Date(T0 + 90_000).toUTCString(), 90_000],
    ['999999', 24 * HOUR],
    ['soon', undefined],
    ['', undefined],
    [null, undefined],
    [undefined, undefined],
    [['45', '90'], 45_000],
  ])('reads %j as %s ms (seconds or a date, kept between 1 s and a day)', (header, ms) => {
    expect(retryAfterMs(header, T0)).toBe(ms);
  });
});
