import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createSealer, parseKeyring } from '../../base/crypto.ts';
import { ProviderError, type Provider } from '../../oauth/provider.ts';
import { createMemoryStore } from '../../store/memory.ts';
import { createConnectionRepository, type ConnectionRecord } from '../records.ts';
import { createRefreshOutcomes } from './outcomes.ts';
import { createTokenService } from './service.ts';

const NOW = 1_700_000_000_000;
const KEYRING = `k:${Buffer.alloc(32, 3).toString('base64')}`;
const expired: ConnectionRecord = {
  id: 'c1',
  apiUrl: 'https://eu.api.example.test/licenses/1',
  status: 'connected',
  connectedAt: NOW - 7_200_000,
  tokens: { accessToken: 'at-1', refreshToken: 'rt-1', expiresAt: NOW - 1 },
};

/** A connection whose token expired, refreshed by a provider that answers `refresh`. */
async function refreshed(refresh: Provider['refresh']) {
  const store = createMemoryStore(() => NOW);
  const connections = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)));
  const tokens = createTokenService({
    store,
    connections,
    provider: { refresh } as unknown as Provider,
    now: () => NOW,
    sleep: async () => {},
    log: pino({ level: 'silent' }),
    refreshAheadMs: 300_000,
    tokenTimeoutMs: 1_000,
    leaseMs: 2_000,
  });
  await connections.save('sid', expired, 0);
  await tokens.usable('sid', (await connections.load('sid', 'c1'))!).catch(() => undefined);
  const outcomes = await createRefreshOutcomes({ store, now: () => NOW }).lastHour();
  return { outcomes, record: (await connections.load('sid', 'c1'))!.record };
}

describe('refresh outcomes, counted in the store for every instance to read', () => {
  it('a stored pair counts as refreshed, and the record says when', async () => {
    const { outcomes, record } = await refreshed(async () => ({
      accessToken: 'at-2',
      refreshToken: 'rt-2',
      expiresAt: NOW + 3_600_000,
    }));
    expect(outcomes).toEqual({ refreshed: 1, rejected: 0, transient: 0, lost: 0 });
    expect(record.refreshedAt).toBe(NOW);
  });

  it.each(['rejected', 'transient', 'lost'] as const)(
    'a %s refresh counts as such',
    async (failure) => {
      const { outcomes, record } = await refreshed(async () => {
        throw new ProviderError(failure, 'no');
      });
      expect(outcomes[failure]).toBe(1);
      expect(outcomes.refreshed).toBe(0);
      expect(record.refreshedAt).toBeUndefined();
    },
  );
});
