import { describe, expect, it } from 'vitest';
import type { ConnectionRecord } from '../records.ts';
import {
  heldBack,
  mayRefreshOnRejection,
  refreshBackoffMs,
  shouldRefresh,
  stillNeeded,
} from './policy.ts';

const NOW = 1_700_000_000_000;
const AHEAD = 300_000;
const connected = (expiresInMs: number): ConnectionRecord => ({
  id: 'c1',
  apiUrl: 'https://eu1.api.example.com',
  status: 'connected',
  connectedAt: NOW - 1000,
  tokens: { accessToken: 'a', refreshToken: 'r', expiresAt: NOW + expiresInMs },
});

describe('shouldRefresh', () => {
  it.each([
    ['an hour left', connected(3_600_000), false, 'fresh'],
    ['one second more than the margin', connected(AHEAD + 1000), false, 'fresh'],
    ['exactly the margin left', connected(AHEAD), true, 'expiring'],
    ['59 s left with a 300 s margin', connected(59_000), true, 'expiring'],
    ['expiring this very millisecond', connected(0), true, 'expired'],
    ['expired a minute ago', connected(-60_000), true, 'expired'],
  ])('with %s: refresh=%s (%s)', (_name, record, refresh, reason) => {
    expect(shouldRefresh(record, NOW, AHEAD)).toEqual({ refresh, reason });
  });

  it('never refreshes a disconnected connection', () => {
    const record: ConnectionRecord = {
      id: 'c1',
      apiUrl: 'https://eu1.api.example.com',
      status: 'disconnected',
      connectedAt: NOW,
      disconnectedReason: 'refresh_rejected',
    };
    expect(shouldRefresh(record, NOW, AHEAD)).toEqual({ refresh: false, reason: 'disconnected' });
  });
});

describe('refreshBackoffMs', () => {
  it.each([
    [1, undefined, 1000],
    [2, undefined, 2000],
    [3, undefined, 4000],
    [10, undefined, 60_000],
    [1, 30_000, 30_000],
    [7, 5000, 60_000],
  ])('after %s failures with Retry-After %s waits %s ms', (attempts, retryAfter, expected) => {
    expect(refreshBackoffMs(attempts, retryAfter)).toBe(expected);
  });
});

describe('mayRefreshOnRejection', () => {
  const base: ConnectionRecord = {
    id: 'c1',
    apiUrl: 'https://api.example/licenses/1',
    status: 'connected',
    connectedAt: 0,
    tokens: { accessToken: 'a', refreshToken: 'r', expiresAt: 3_600_000 },
  };
  it.each([
    ['no refresh ever failed to cure a 401', undefined, 1000, true],
    ['a refresh failed to cure a 401 just now', 1000, 1000, false],
    ['a refresh failed to cure a 401 59 s ago', 1000, 60_000, false],
    ['a refresh failed to cure a 401 60 s ago', 1000, 61_000, true],
  ])('%s: %s', (_name, uncuredAt, now, expected) => {
    const record = uncuredAt === undefined ? base : { ...base, uncuredAt };
    expect(mayRefreshOnRejection(record, now, 60_000)).toBe(expected);
  });

  it('a refresh that succeeded a moment ago does not hold back the next 401', () => {
    // The provider may expire or revoke a token at any time: its rule is refresh once and retry.
    const refreshed = { ...base, tokens: { ...base.tokens!, expiresAt: 3_600_000 + 1000 } };
    expect(mayRefreshOnRejection(refreshed, 1000, 60_000)).toBe(true);
  });
});

describe('stillNeeded, for a 401 to access token "a"', () => {
  const policy = { aheadMs: AHEAD, holdMs: 60_000 };
  const rejected = { kind: 'rejected', accessToken: 'a' } as const;
  it.each([
    ['the rejected token, nothing held', connected(3_600_000), true],
    [
      'a replacement not due',
      {
        ...connected(3_600_000),
        tokens: { accessToken: 'b', refreshToken: 'r', expiresAt: NOW + 3_600_000 },
      },
      false,
    ],
    [
      'a replacement already expired (a failover went back in time)',
      { ...connected(-1), tokens: { accessToken: 'b', refreshToken: 'r', expiresAt: NOW - 1 } },
      true,
    ],
    [
      'the rejected token, its 401s held back since 59 s',
      { ...connected(3_600_000), uncuredAt: NOW - 59_000 },
      false,
    ],
    [
      'the rejected token, held back since 60 s: over',
      { ...connected(3_600_000), uncuredAt: NOW - 60_000 },
      true,
    ],
    [
      'the rejected token, held back but expired: due anyway',
      { ...connected(-1), uncuredAt: NOW - 1000 },
      true,
    ],
  ])('with %s: %s', (_name, record, expected) => {
    expect(stillNeeded(record, rejected, NOW, policy)).toBe(expected);
  });

  it('hands the rejected token back only while its 401s are held back', () => {
    const held = { ...connected(3_600_000), uncuredAt: NOW - 1000 };
    expect(heldBack(held, rejected, NOW, 60_000)).toBe(true);
    expect(heldBack(connected(3_600_000), rejected, NOW, 60_000)).toBe(false);
    expect(heldBack(held, { kind: 'proactive' }, NOW, 60_000)).toBe(false);
  });
});
