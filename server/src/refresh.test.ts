import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createConnectionRepository, type ConnectionRecord } from './connections.ts';
import { createSealer, parseKeyring } from './crypto.ts';
import { keys } from './keys.ts';
import { ProviderError, type Provider, type TokenSet } from './provider.ts';
import { createMemoryStore } from './store/memory.ts';
import { StoreUnavailableError, type Store } from './store/types.ts';
import { createTokenService } from './tokens.ts';

const NOW = 1_700_000_000_000;
const SID = 'sid';
const KEYRING = `k:${Buffer.alloc(32, 3).toString('base64')}`;

/** The embedded store, made to fail as an unreachable Redis does while `down` is set. */
function flakyStore() {
  const inner = createMemoryStore(() => NOW);
  const state = { down: false };
  const store = new Proxy(inner, {
    get(target, property: keyof Store) {
      const method = target[property];
      return async (...args: unknown[]) => {
        if (state.down) throw new StoreUnavailableError('Redis did not answer');
        return (method as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, state };
}

const record: ConnectionRecord = {
  id: 'c1',
  apiUrl: 'https://eu.api.example.test/licenses/1',
  status: 'connected',
  connectedAt: NOW - 7_200_000,
  tokens: { accessToken: 'at-1', refreshToken: 'rt-1', expiresAt: NOW - 1 },
};

/** A token service over `store` whose provider refreshes with `refresh`; sleeps wait for the test. */
async function service(store: Store, refresh: Provider['refresh']) {
  const connections = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)));
  const sleeps: (() => void)[] = [];
  const tokens = createTokenService({
    store,
    connections,
    provider: { refresh } as unknown as Provider,
    now: () => NOW,
    sleep: () => new Promise<void>((resolve) => sleeps.push(resolve)),
    log: pino({ level: 'silent' }),
    refreshAheadMs: 300_000,
    tokenTimeoutMs: 1_000,
    leaseMs: 2_000,
  });
  await connections.save(SID, record, 0);
  return { tokens, connections, sleeps, loaded: (await connections.load(SID, 'c1'))! };
}

describe('a refresh whose new pair the store cannot take', () => {
  it('keeps the lock and stores the pair once the store is back, so the rotation is not lost', async () => {
    const { store, state } = flakyStore();
    const rotated: TokenSet = {
      accessToken: 'at-2',
      refreshToken: 'rt-2',
      expiresAt: NOW + 3_600_000,
    };
    // The provider rotates, and by the time its answer is in, Redis has gone away.
    const { tokens, connections, sleeps, loaded } = await service(store, async () => {
      state.down = true;
      return rotated;
    });

    await expect(tokens.usable(SID, loaded)).rejects.toBeInstanceOf(StoreUnavailableError);

    state.down = false;
    // Nobody else may refresh with the used token meanwhile: the lock is still held.
    expect(await store.get(keys.refreshLock(SID, 'c1'))).not.toBeNull();
    expect(sleeps, 'a retry waiting for the store').toHaveLength(1);
    sleeps.shift()!();
    await vi.waitFor(async () => {
      expect(await store.get(keys.refreshLock(SID, 'c1'))).toBeNull();
    });
    expect(await connections.load(SID, 'c1')).toMatchObject({
      version: 2,
      record: { status: 'connected', tokens: rotated },
    });
  });
});

describe('a refresh holder whose lease ran out while another instance refreshed', () => {
  it('reports its failure nowhere: the newer pair stands and no back-off of its own holds it back', async () => {
    const store = createMemoryStore(() => NOW);
    const newer: TokenSet = {
      accessToken: 'at-3',
      refreshToken: 'rt-3',
      expiresAt: NOW + 3_600_000,
    };
    // Another instance, over the same store.
    const other = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)));
    const setup = await service(store, async () => {
      // While this holder waited (paused past its lease), the other instance stored a newer
      // pair; then this holder's own request comes to nothing.
      const current = (await other.load(SID, 'c1'))!;
      await other.save(SID, { ...current.record, tokens: newer }, current.version);
      throw new ProviderError('lost', 'no answer from the token endpoint');
    });

    const result = await setup.tokens.usable(SID, setup.loaded, 'at-1');
    expect(result.record.tokens).toEqual(newer);
    expect(await store.get(keys.backoff(SID, 'c1'))).toBeNull();
    expect((await other.load(SID, 'c1'))!.record.refreshLost).toBeUndefined();
  });
});
