import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './retry-after.ts';

const NOW = Date.UTC(2025, 0, 15, 9, 30);

describe('parseRetryAfter', () => {
  it.each([
    ['absent', null, undefined],
    ['seconds', '120', NOW + 120_000],
    ['an HTTP date', new Date(NOW + 60_000).toUTCString(), NOW + 60_000],
    ['a date in the past', new Date(NOW - 60_000).toUTCString(), NOW],
    ['garbage', 'soon', undefined],
    ['negative', '-5', undefined],
    ["a list (Node's incoming headers): its first", ['45', '90'], NOW + 45_000],
  ])('reads %s', (_name, header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
  });
});
