import { describe, expect, it } from 'vitest';
import { checkDurability, durabilityWarnings } from './durability.ts';

describe('durabilityWarnings', () => {
  it.each([
    [
      'append-only and noeviction',
      { appendonly: 'yes', save: '', maxmemoryPolicy: 'noeviction' },
      [],
    ],
    [
      'no persistence at all',
      { appendonly: 'no', save: '', maxmemoryPolicy: 'noeviction' },
      ['keeps no data on disk'],
    ],
    [
      'snapshots only',
      { appendonly: 'no', save: '3600 1', maxmemoryPolicy: 'noeviction' },
      ['since the last RDB snapshot'],
    ],
    [
      'an evicting policy',
      { appendonly: 'yes', save: '', maxmemoryPolicy: 'volatile-lru' },
      ['maxmemory-policy is volatile-lru'],
    ],
    [
      'both',
      { appendonly: 'no', save: '', maxmemoryPolicy: 'allkeys-lru' },
      ['keeps no data on disk', 'allkeys-lru'],
    ],
  ])('with %s', (_name, settings, expected) => {
    const warnings = durabilityWarnings(settings);
    expect(warnings).toHaveLength(expected.length);
    expected.forEach((text, index) => expect(warnings[index]).toContain(text));
  });
});

describe('checkDurability', () => {
  it('reads the three settings', async () => {
    const check = await checkDurability(async (names) => {
      expect(names).toEqual(['appendonly', 'save', 'maxmemory-policy']);
      return { appendonly: 'yes', save: '', 'maxmemory-policy': 'noeviction' };
    });
    expect(check).toEqual({
      readable: true,
      settings: { appendonly: 'yes', save: '', maxmemoryPolicy: 'noeviction' },
      warnings: [],
    });
  });

  it('says it cannot tell when CONFIG is refused', async () => {
    const check = await checkDurability(async () => {
      throw new Error("ERR unknown command 'CONFIG'");
    });
    expect(check).toEqual({ readable: false, reason: "ERR unknown command 'CONFIG'" });
  });
});
