import type { EventSink } from '../events.ts';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import {
  createConnectionRepository,
  type ConnectionRecord,
  type LoadedConnection,
} from '../records.ts';
import { createSealer, parseKeyring } from '../../base/crypto.ts';
import { keys } from '../../store/keys.ts';
import { ProviderError, type Provider, type TokenSet } from '../../oauth/provider.ts';
import { createMemoryStore } from '../../store/memory.ts';
import { StoreUnavailableError, type Store } from '../../store/types.ts';
import { createTokenService } from './service.ts';

const NOW = 1_700_000_000_000;
const SID = 'sid';
const KEYRING = `k:${Buffer.alloc(32, 3).toString('base64')}`;

/**
 * The embedded store, made to fail as an unreachable Redis does while `down` is set; and the
 * method `unanswered` names, once, applied but not answered (a command that timed out in flight).
 */
function flakyStore() {
  const inner = createMemoryStore(() => NOW);
  const state: {
    down: boolean;
    unanswered?: keyof Store | undefined;
    /** The store goes down once this method has answered. */
    downAfter?: keyof Store | undefined;
  } = { down: false };
  const store = new Proxy(inner, {
    get(target, property: keyof Store) {
      const method = target[property];
      return async (...args: unknown[]) => {
        if (state.down) throw new StoreUnavailableError('Redis did not answer');
        const answer = await (method as (...a: unknown[]) => unknown).apply(target, args);
        if (state.downAfter === property) [state.down, state.downAfter] = [true, undefined];
        if (state.unanswered !== property) return answer;
        state.unanswered = undefined;
        throw new StoreUnavailableError('Redis did not answer within 1000 ms');
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

  it('counts a pair Redis applied without answering as stored, and clears the back-off', async () => {
    const { store, state } = flakyStore();
    // An earlier transient failure, over: its back-off is kept a minute past its end.
    await store.set(
      keys.backoff(SID, 'c1'),
      JSON.stringify({ until: NOW - 1, attempts: 2 }),
      60_000,
    );
    const rotated: TokenSet = {
      accessToken: 'at-2',
      refreshToken: 'rt-2',
      expiresAt: NOW + 3_600_000,
    };
    const { tokens, connections, sleeps, loaded } = await service(store, async () => {
      state.unanswered = 'setVersioned';
      return rotated;
    });
    await expect(tokens.usable(SID, loaded)).rejects.toBeInstanceOf(StoreUnavailableError);
    sleeps.shift()!();
    await vi.waitFor(async () => {
      expect(await store.get(keys.refreshLock(SID, 'c1'))).toBeNull();
    });
    expect(await connections.load(SID, 'c1')).toMatchObject({
      version: 2,
      record: { tokens: rotated },
    });
    expect(await store.get(keys.backoff(SID, 'c1'))).toBeNull();
  });
});

describe('a refresh whose record changed meanwhile without a new pair', () => {
  const rotated: TokenSet = {
    accessToken: 'at-2',
    refreshToken: 'rt-2',
    expiresAt: NOW + 3_600_000,
  };

  it('stores its pair over a note written meanwhile (a 401 not cured): the pair is the newer', async () => {
    const store = createMemoryStore(() => NOW);
    const repository = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)));
    const { tokens, connections, loaded } = await service(store, async () => {
      // While the provider answers, another call notes an uncured 401: a write of the same pair.
      const seen = (await repository.load(SID, 'c1'))!;
      await repository.save(SID, { ...seen.record, uncuredAt: NOW }, seen.version);
      return rotated;
    });
    expect((await tokens.usable(SID, loaded)).record.tokens).toEqual(rotated);
    // The note stays with the new pair: the 401s it holds back are still held back.
    expect(await connections.load(SID, 'c1')).toMatchObject({
      version: 3,
      record: { status: 'connected', tokens: rotated, uncuredAt: NOW },
    });
  });

  it('keeps the lock and stores its pair once the store is back, when it fails while looking', async () => {
    const { store, state } = flakyStore();
    const repository = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)));
    const { tokens, connections, sleeps, loaded } = await service(store, async () => {
      const seen = (await repository.load(SID, 'c1'))!;
      await repository.save(SID, { ...seen.record, uncuredAt: NOW }, seen.version);
      state.downAfter = 'setVersioned';
      return rotated;
    });
    await expect(tokens.usable(SID, loaded)).rejects.toBeInstanceOf(StoreUnavailableError);
    state.down = false;
    expect(await store.get(keys.refreshLock(SID, 'c1'))).not.toBeNull();
    sleeps.shift()!();
    await vi.waitFor(async () => {
      expect(await store.get(keys.refreshLock(SID, 'c1'))).toBeNull();
    });
    expect(await connections.load(SID, 'c1')).toMatchObject({ record: { tokens: rotated } });
  });
});

describe('a refresh across a failover that lost the last write', () => {
  /** What a promoted replica that missed the latest write holds: the record one version back. */
  async function rollBack(store: Store, to: ConnectionRecord): Promise<void> {
    await store.del(keys.connection(SID, 'c1'));
    await createConnectionRepository(store, createSealer(parseKeyring(KEYRING))).save(SID, to, 0);
  }
  const rotated: TokenSet = {
    accessToken: 'at-3',
    refreshToken: 'rt-3',
    expiresAt: NOW + 3_600_000,
  };

  it('writes the rotated pair over the older record: the older refresh token is used up', async () => {
    const store = createMemoryStore(() => NOW);
    const setup = await service(store, async () => {
      // The store fails over while the provider answers: the write of rt-2 is gone.
      await rollBack(store, record);
      return rotated;
    });
    // rt-2 was stored by an earlier refresh: version 2.
    await setup.connections.save(
      SID,
      { ...record, tokens: { accessToken: 'at-2', refreshToken: 'rt-2', expiresAt: NOW - 1 } },
      1,
    );
    const loaded = (await setup.connections.load(SID, 'c1'))!;
    expect(loaded.version).toBe(2);

    const result = await setup.tokens.usable(SID, loaded);
    expect(result.record.tokens).toEqual(rotated);
    expect(await setup.connections.load(SID, 'c1')).toMatchObject({
      version: 2,
      record: { tokens: rotated },
    });
  });

  it('does so too when the store comes back from the failover only after the answer', async () => {
    const { store, state } = flakyStore();
    const { tokens, connections, sleeps } = await service(store, async () => {
      state.down = true;
      return rotated;
    });
    await connections.save(
      SID,
      { ...record, tokens: { accessToken: 'at-2', refreshToken: 'rt-2', expiresAt: NOW - 1 } },
      1,
    );
    const current = (await connections.load(SID, 'c1'))!;
    await expect(tokens.usable(SID, current)).rejects.toBeInstanceOf(StoreUnavailableError);
    state.down = false;
    await rollBack(store, record);
    sleeps.shift()!();
    await vi.waitFor(async () => {
      expect(await store.get(keys.refreshLock(SID, 'c1'))).toBeNull();
    });
    expect(await connections.load(SID, 'c1')).toMatchObject({ record: { tokens: rotated } });
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

    const result = await setup.tokens.usable(SID, setup.loaded, {
      kind: 'rejected',
      accessToken: 'at-1',
    });
    expect(result.record.tokens).toEqual(newer);
    expect(await store.get(keys.backoff(SID, 'c1'))).toBeNull();
    expect((await other.load(SID, 'c1'))!.record.refreshLost).toBeUndefined();
  });
});

/**
 * Instances of the token service over one embedded store, all on one injected clock. A sleep
 * waits until the test lets it go (`wake`), and the store's expiry follows the clock, so a lease
 * runs out when the test moves the clock past it, never by itself.
 */
function instances(count: number, startAt = NOW) {
  let now = startAt;
  const clock = () => now;
  const store = createMemoryStore(clock);
  const sealer = createSealer(parseKeyring(KEYRING));
  const connections = createConnectionRepository(store, sealer);
  const sleeps: (() => void)[] = [];
  const calls: string[] = [];
  /** Events land in a list of the store, with the write that reports them. */
  const sink: EventSink = {
    record: async (_sid, event) => ({
      key: 'outbox',
      entry: JSON.stringify(event),
      ttlMs: 60_000,
    }),
    recorded: async () => {},
  };
  const events = async () =>
    (await store.listRange('outbox', 0, -1)).map((entry) => JSON.parse(entry) as unknown);
  let answer: (refreshToken: string) => Promise<TokenSet> = async () => {
    throw new Error('no provider answer set');
  };
  const made = Array.from({ length: count }, () =>
    createTokenService({
      store,
      connections: createConnectionRepository(store, sealer, { events: sink }),
      provider: {
        refresh: (_apiUrl: string, refreshToken: string) => {
          calls.push(refreshToken);
          return answer(refreshToken);
        },
      } as unknown as Provider,
      now: clock,
      sleep: () => new Promise<void>((resolve) => sleeps.push(resolve)),
      log: pino({ level: 'silent' }),
      refreshAheadMs: 300_000,
      refreshMinIntervalMs: 60_000,
      tokenTimeoutMs: 1_000,
      leaseMs: 2_000,
    }),
  );
  return {
    store,
    connections,
    tokens: made,
    calls,
    events,
    advance: (ms: number) => (now += ms),
    answerWith: (next: typeof answer) => (answer = next),
    /** Let every sleeping waiter look again. */
    wake: () => sleeps.splice(0).forEach((resolve) => resolve()),
    pending: () => sleeps.length,
    rotated: (n: number): TokenSet => ({
      accessToken: `at-${n}`,
      refreshToken: `rt-${n}`,
      expiresAt: now + 3_600_000,
    }),
    async connect(expiresInMs: number): Promise<LoadedConnection> {
      await connections.save(
        SID,
        { ...record, tokens: { ...record.tokens!, expiresAt: now + expiresInMs } },
        0,
      );
      return (await connections.load(SID, 'c1'))!;
    },
  };
}

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => ((resolve = ok), (reject = fail)));
  return { promise, resolve, reject };
}

/** Let every promise chain that can go on, go on. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the refresh, step by step on the in-memory store', () => {
  it('single flight: concurrent calls in one process make one provider call', async () => {
    const w = instances(1);
    const loaded = await w.connect(-1);
    const answer = deferred<TokenSet>();
    w.answerWith(() => answer.promise);
    const calls = Array.from({ length: 5 }, () => w.tokens[0]!.usable(SID, loaded));
    await settle();
    answer.resolve(w.rotated(2));
    const results = await Promise.all(calls);
    expect(results.map((result) => result.record.tokens?.accessToken)).toEqual(
      Array(5).fill('at-2'),
    );
    expect(w.calls).toEqual(['rt-1']);
  });

  it('lock wait: another instance waits for the holder and uses what it stored', async () => {
    const w = instances(2);
    const loaded = await w.connect(-1);
    const answer = deferred<TokenSet>();
    w.answerWith(() => answer.promise);
    const holder = w.tokens[0]!.usable(SID, loaded);
    await settle();
    const waiter = w.tokens[1]!.usable(SID, loaded);
    await settle();
    expect(w.pending()).toBe(1);
    answer.resolve(w.rotated(2));
    expect((await holder).record.tokens?.accessToken).toBe('at-2');
    w.wake();
    expect((await waiter).record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toEqual(['rt-1']);
    expect(w.tokens[1]!.counters.lockWaits).toBe(1);
  });

  it('a refresh ahead of expiry waits for no other instance: a holder that died costs the call nothing', async () => {
    const w = instances(1);
    // Due for its refresh ahead (five minutes), valid for one more.
    const loaded = await w.connect(60_000);
    await w.store.setIfAbsent(keys.refreshLock(SID, 'c1'), 'dead-holder', 2_000);
    const result = await w.tokens[0]!.usable(SID, loaded);
    expect(result.record.tokens?.accessToken).toBe('at-1');
    expect(w.pending()).toBe(0);
    expect(w.calls).toEqual([]);
    // Once the lease ran out, the next call refreshes.
    w.advance(2_001);
    w.answerWith(async () => w.rotated(2));
    expect((await w.tokens[0]!.usable(SID, loaded)).record.tokens?.accessToken).toBe('at-2');
  });

  it('a 401 whose token was replaced by one already expired refreshes that one (a store gone back in time)', async () => {
    const w = instances(1);
    // A failover rolled the record back to an older pair: its access token has expired.
    const stale = await w.connect(-1);
    w.answerWith(async () => w.rotated(2));
    const result = await w.tokens[0]!.usable(SID, stale, { kind: 'rejected', accessToken: 'at-0' });
    expect(result.record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toEqual(['rt-1']);
  });

  it('a rejection joins no flight that would hand the rejected token back: it refreshes that one too', async () => {
    const w = instances(2);
    const loaded = await w.connect(-1);
    const answer = deferred<TokenSet>();
    w.answerWith(() => answer.promise);
    // Instance 1 refreshes rt-1; instance 0's flight for the rejection of at-1 waits for it.
    const holder = w.tokens[1]!.usable(SID, loaded);
    await settle();
    const first = w.tokens[0]!.usable(SID, loaded, { kind: 'rejected', accessToken: 'at-1' });
    await settle();
    expect(w.pending()).toBe(1);
    answer.resolve(w.rotated(2));
    await holder;
    // Before that flight looks again, another call on instance 0 sends the stored at-2, which
    // the API rejects too (a revocation, say): it joins the flight that will answer at-2.
    w.answerWith(async () => w.rotated(3));
    const stored = (await w.connections.load(SID, 'c1'))!;
    const second = w.tokens[0]!.usable(SID, stored, { kind: 'rejected', accessToken: 'at-2' });
    w.wake();
    expect((await first).record.tokens?.accessToken).toBe('at-2');
    expect((await second).record.tokens?.accessToken).toBe('at-3');
    expect(w.calls).toEqual(['rt-1', 'rt-2']);
  });

  it('lease recovery: a lock left by a holder that died runs out, and the next one refreshes', async () => {
    const w = instances(1);
    const loaded = await w.connect(-1);
    await w.store.setIfAbsent(keys.refreshLock(SID, 'c1'), 'dead-holder', 2_000);
    w.answerWith(async () => w.rotated(2));
    const call = w.tokens[0]!.usable(SID, loaded);
    await settle();
    expect(w.calls).toEqual([]);
    w.advance(2_001);
    w.wake();
    expect((await call).record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toEqual(['rt-1']);
  });

  it('re-read after the lock: a pair another instance stored meanwhile is used, not refreshed', async () => {
    const w = instances(1);
    const stale = await w.connect(-1);
    await w.connections.save(SID, { ...stale.record, tokens: w.rotated(9) }, stale.version);
    const result = await w.tokens[0]!.usable(SID, stale);
    expect(result.record.tokens?.accessToken).toBe('at-9');
    expect(w.calls).toEqual([]);
  });

  it('back-off: after a transient failure, no provider call until it ends; a valid token is kept, an expired one gets 503', async () => {
    const w = instances(1);
    const expiring = await w.connect(500);
    w.answerWith(async () => {
      throw new ProviderError('transient', 'the token endpoint answered 503', { status: 503 });
    });
    // Proactive, the token still valid: it is kept.
    expect((await w.tokens[0]!.usable(SID, expiring)).record.tokens?.accessToken).toBe('at-1');
    expect(w.calls).toHaveLength(1);
    expect(await w.tokens[0]!.usable(SID, expiring)).toBeDefined();
    expect(w.calls).toHaveLength(1);
    // Once expired, within the back-off (1 s): 503 with Retry-After, and still no provider call.
    w.advance(600);
    const expired = (await w.connections.load(SID, 'c1'))!;
    await expect(w.tokens[0]!.usable(SID, expired)).rejects.toMatchObject({
      code: 'upstream_unavailable',
      retryAfter: 1,
    });
    expect(w.calls).toHaveLength(1);
    // After it, the provider is asked again.
    w.advance(1_000);
    w.answerWith(async () => w.rotated(2));
    expect((await w.tokens[0]!.usable(SID, expired)).record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toHaveLength(2);
  });

  it('disconnect: a rejected refresh disconnects the connection, drops its tokens and says so', async () => {
    const w = instances(1);
    const loaded = await w.connect(-1);
    w.answerWith(async () => {
      throw new ProviderError('rejected', 'invalid_grant', { status: 400 });
    });
    const result = await w.tokens[0]!.usable(SID, loaded);
    expect(result.record).toMatchObject({
      status: 'disconnected',
      disconnectedReason: 'refresh_rejected',
    });
    expect(result.record.tokens).toBeUndefined();
    expect(await w.events()).toEqual([
      {
        type: 'connection.disconnected',
        connection: {
          id: 'c1',
          api_origin: 'https://eu.api.example.test',
          reason: 'refresh_rejected',
        },
      },
    ]);
  });

  it('lost response: the connection is marked, and a later rejection says the answer was lost', async () => {
    const w = instances(1);
    const loaded = await w.connect(-1);
    w.answerWith(async () => {
      throw new ProviderError('lost', 'the connection closed before the answer');
    });
    await expect(w.tokens[0]!.usable(SID, loaded)).rejects.toMatchObject({
      code: 'upstream_unavailable',
    });
    expect((await w.connections.load(SID, 'c1'))!.record.refreshLost).toBe(true);
    w.advance(2_000);
    w.answerWith(async () => {
      throw new ProviderError('rejected', 'invalid_grant', { status: 400 });
    });
    const result = await w.tokens[0]!.usable(SID, (await w.connections.load(SID, 'c1'))!);
    expect(result.record.disconnectedReason).toBe('refresh_response_lost');
  });

  it('a 401 met before the refresh budget held, looked at after: no refresh, and the token goes back for the 401 to be passed on', async () => {
    const w = instances(2);
    const loaded = await w.connect(3_000_000);
    w.answerWith(async () => w.rotated(2));
    // This call read the record, sent at-1 and met a 401. Meanwhile another call's retry with
    // at-1 was refused too, and it held back 401-triggered refreshes (a path that answers 401).
    await w.tokens[1]!.retried(SID, loaded, 401);
    const result = await w.tokens[0]!.usable(SID, loaded, {
      kind: 'rejected',
      accessToken: 'at-1',
    });
    expect(w.calls).toEqual([]);
    expect(result.record.tokens?.accessToken).toBe('at-1');
    expect(result.record.uncuredAt).toBe(NOW);
    // Once the window is over, a 401 refreshes again.
    w.advance(60_000);
    const later = await w.tokens[0]!.usable(SID, result, { kind: 'rejected', accessToken: 'at-1' });
    expect(later.record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toEqual(['rt-1']);
  });

  it('a refresh made for a 401 keeps the lock until a retry with its token is answered: a 401 met meanwhile elsewhere refreshes nothing when that retry is refused too', async () => {
    const w = instances(2);
    const loaded = await w.connect(3_000_000);
    w.answerWith(async () => w.rotated(2));
    const cured = await w.tokens[0]!.usable(SID, loaded, { kind: 'rejected', accessToken: 'at-1' });
    expect(cured.record.tokens?.accessToken).toBe('at-2');
    // A call on instance 1 read the new pair, sent at-2 first and met a 401 before the retry's
    // answer came: it waits for the lock.
    const other = w.tokens[1]!.usable(SID, cured, { kind: 'rejected', accessToken: 'at-2' });
    await settle();
    expect(w.pending()).toBe(1);
    await w.tokens[0]!.retried(SID, cured, 401);
    w.wake();
    expect((await other).record.tokens?.accessToken).toBe('at-2');
    expect(w.calls).toEqual(['rt-1']);
  });

  it('the lock goes once the retry is answered otherwise, and a 401 met meanwhile then refreshes (the provider may revoke at any time)', async () => {
    const w = instances(2);
    const loaded = await w.connect(3_000_000);
    w.answerWith(async () => w.rotated(2));
    const cured = await w.tokens[0]!.usable(SID, loaded, { kind: 'rejected', accessToken: 'at-1' });
    const other = w.tokens[1]!.usable(SID, cured, { kind: 'rejected', accessToken: 'at-2' });
    await settle();
    w.answerWith(async () => w.rotated(3));
    // No answer at all (the client went, the API did not answer) lets it go just the same.
    await w.tokens[0]!.retried(SID, cured, 0);
    w.wake();
    expect((await other).record.tokens?.accessToken).toBe('at-3');
    expect(w.calls).toEqual(['rt-1', 'rt-2']);
  });

  it('a refresh ahead of expiry keeps no lock for a retry', async () => {
    const w = instances(2);
    const loaded = await w.connect(-1);
    w.answerWith(async () => w.rotated(2));
    await w.tokens[0]!.usable(SID, loaded);
    expect(await w.store.get(keys.refreshLock(SID, 'c1'))).toBeNull();
  });

  it('a pair that arrives already expired (its holder paused past the token’s life) is refreshed again before the retry', async () => {
    // The standalone soak (seed 107): a broker paused 9.7 s holding a refresh's answer stored a
    // pair whose 6-second access token had expired, retried with it, met a 401 and took it for
    // a path that answers 401 (the refresh budget engaged, the 401 passed on).
    const w = instances(1);
    const loaded = await w.connect(3_000_000);
    const answer = deferred<TokenSet>();
    w.answerWith(() => answer.promise);
    const call = w.tokens[0]!.usable(SID, loaded, { kind: 'rejected', accessToken: 'at-1' });
    await settle();
    const issued: TokenSet = { accessToken: 'at-2', refreshToken: 'rt-2', expiresAt: NOW + 6000 };
    w.advance(9_700);
    w.answerWith(async () => w.rotated(3));
    answer.resolve(issued);
    expect((await call).record.tokens?.accessToken).toBe('at-3');
    expect(w.calls).toEqual(['rt-1', 'rt-2']);
    expect(await w.store.get(keys.refreshLock(SID, 'c1'))).not.toBeNull();
  });

  it('a rejected token is never used again, even when the refresh is held back', async () => {
    const w = instances(1);
    const loaded = await w.connect(3_000_000);
    w.answerWith(async () => {
      throw new ProviderError('transient', 'timeout');
    });
    await expect(
      w.tokens[0]!.usable(SID, loaded, { kind: 'rejected', accessToken: 'at-1' }),
    ).rejects.toMatchObject({ code: 'upstream_unavailable' });
  });
});

describe('a holder paused past its lease after the provider answered it (issue 39)', () => {
  /** The provider's rule for refresh tokens: single use, a second use fails. */
  function singleUse(w: ReturnType<typeof instances>, answers: Map<string, Promise<TokenSet>>) {
    const used = new Set<string>();
    w.answerWith(async (refreshToken) => {
      if (used.has(refreshToken))
        throw new ProviderError('rejected', 'token endpoint answered 400', { status: 400 });
      used.add(refreshToken);
      return answers.get(refreshToken) ?? w.rotated(Number(refreshToken.slice(3)) + 1);
    });
  }

  it('keeps the connection: the other instance’s second use of the token fails, and the resumed holder stores the newest pair', async () => {
    const w = instances(2);
    const loaded = await w.connect(-1);
    // The provider has rotated rt-1 into rt-2, but the holder is paused before it reads the answer.
    const answered = deferred<TokenSet>();
    singleUse(w, new Map([['rt-1', answered.promise]]));
    const paused = w.tokens[0]!.usable(SID, loaded);
    await settle();
    expect(w.calls).toEqual(['rt-1']);
    // Its lease runs out; another instance takes it and presents rt-1 again: the provider refuses.
    w.advance(2_001);
    const other = await w.tokens[1]!.usable(SID, loaded);
    expect(w.calls).toEqual(['rt-1', 'rt-1']);
    expect(other.record.status).toBe('disconnected');
    // The holder resumes with the only pair the provider still honours, and stores it.
    answered.resolve(w.rotated(2));
    expect((await paused).record).toMatchObject({
      status: 'connected',
      tokens: { refreshToken: 'rt-2' },
    });
    expect((await w.connections.load(SID, 'c1'))!.record).toMatchObject({
      status: 'connected',
      tokens: { refreshToken: 'rt-2' },
    });
    expect((await w.events()).map((event) => (event as { type: string }).type)).toEqual([
      'connection.disconnected',
      'connection.reconnected',
    ]);
    // The connection goes on refreshing from the newest token.
    w.advance(3_600_000);
    const next = await w.tokens[1]!.usable(SID, (await w.connections.load(SID, 'c1'))!);
    expect(next.record.tokens?.refreshToken).toBe('rt-3');
    expect(w.calls).toEqual(['rt-1', 'rt-1', 'rt-2']);
  });

  it('leaves a disconnection it did not cause alone: one made after a later refresh stands', async () => {
    const w = instances(2);
    const loaded = await w.connect(-1);
    const answered = deferred<TokenSet>();
    singleUse(w, new Map([['rt-1', answered.promise]]));
    const paused = w.tokens[0]!.usable(SID, loaded);
    await settle();
    w.advance(2_001);
    // Meanwhile the user removed the connection and connected it anew, and that grant was revoked.
    const current = (await w.connections.load(SID, 'c1'))!;
    await w.connections.save(
      SID,
      { ...current.record, tokens: { ...current.record.tokens!, refreshToken: 'rt-9' } },
      current.version,
    );
    const fresh = (await w.connections.load(SID, 'c1'))!;
    await w.connections.save(
      SID,
      {
        id: 'c1',
        apiUrl: record.apiUrl,
        connectedAt: record.connectedAt,
        status: 'disconnected',
        disconnectedReason: 'refresh_rejected',
      },
      fresh.version,
    );
    answered.resolve(w.rotated(2));
    expect((await paused).record.status).toBe('disconnected');
  });
});
