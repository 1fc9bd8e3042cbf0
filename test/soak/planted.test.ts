/**
 * The checker proven on real runs: a short soak of three brokers in this process (their stores
 * wrapped by a test-only Proxy, test/support/in-process.ts's `wrapStore`), once clean, then once
 * per defect planted on purpose. Each defect must fail the invariant that owns it; the clean run
 * passes every one. Redis, the sandbox behind the tap, the receiver and the users are the real
 * soak's (soak.ts); only the brokers' store differs.
 */
import { randomBytes } from 'node:crypto';
import { StoreUnavailableError, type Store } from '@baton/server';
import { describe, expect, it } from 'vitest';
import { check, type Invariant, type Verdict } from './checker.ts';
import { runSoak, type SoakOptions } from './soak.ts';

/** A store whose `overrides` replace its own methods (each given the real store). */
function planted(overrides: { [K in keyof Store]?: (real: Store) => Store[K] }): (
  store: Store,
) => Store {
  return (store) =>
    new Proxy(store, {
      get(target, key, receiver) {
        const override = overrides[key as keyof Store];
        return override ? override(target) : (Reflect.get(target, key, receiver) as unknown);
      },
    });
}

const isLock = (key: string) => key.includes(':lock:');
const isRecord = (key: string) => key.includes(':connection:');

/** Another copy of an outbox entry, under a new event id: one change recorded twice. */
function again(entry: string): string {
  const parsed = JSON.parse(entry) as { id: string };
  return JSON.stringify({ ...parsed, id: `msg_${randomBytes(16).toString('base64url')}` });
}

const DEFECTS: {
  name: string;
  invariant: Invariant;
  wrap: (store: Store) => Store;
  soak?: Partial<SoakOptions>;
}[] = [
  {
    name: 'skips the refresh lock (every instance takes it)',
    invariant: 'C1',
    wrap: planted({
      setIfAbsent: (real) => async (key, value, ttlMs) =>
        isLock(key) ? true : real.setIfAbsent(key, value, ttlMs),
    }),
  },
  {
    name: "drops a rotated pair's write (answers written, writes nothing)",
    invariant: 'C2',
    wrap: (() => {
      let updates = 0;
      return planted({
        setVersioned: (real) => async (key, expected, value, ttlMs, outbox) =>
          isRecord(key) && expected > 0 && updates++ % 4 === 3
            ? true
            : real.setVersioned(key, expected, value, ttlMs, outbox),
      });
    })(),
  },
  {
    name: 'serves a cached session after sign-out',
    invariant: 'C3',
    wrap: (() => {
      const kept = new Map<string, unknown>();
      const stale = <T>(key: string, value: T | null): T | null => {
        if (!key.endsWith(':session') && !isRecord(key)) return value;
        if (value !== null) kept.set(key, value);
        return value ?? (kept.get(key) as T | undefined) ?? null;
      };
      return planted({
        get: (real) => async (key, options) => stale(key, await real.get(key, options)),
        getVersioned: (real) => async (key, options) =>
          stale(key, await real.getVersioned(key, options)),
      });
    })(),
  },
  {
    name: 'records each event twice (two ids for one change)',
    invariant: 'C4',
    wrap: planted({
      setVersioned: (real) => async (key, expected, value, ttlMs, outbox) => {
        const written = await real.setVersioned(key, expected, value, ttlMs, outbox);
        if (written && outbox) await real.listPush(outbox.key, again(outbox.entry), outbox.ttlMs);
        return written;
      },
      delRecording: (real) => async (keys, outbox) => {
        const recorded = await real.delRecording(keys, outbox);
        if (recorded) await real.listPush(outbox.key, again(outbox.entry), outbox.ttlMs);
        return recorded;
      },
    }),
  },
  {
    name: 'stays unavailable for 45 s after the first Redis error (a breaker that does not close)',
    invariant: 'C5',
    wrap: (store) => {
      let stuckUntil = 0;
      return new Proxy(store, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver) as unknown;
          // `scan` answers an iterable, not a promise: passed as it is.
          if (typeof value !== 'function' || key === 'close' || key === 'scan') return value;
          return async (...args: unknown[]) => {
            if (Date.now() < stuckUntil) throw new StoreUnavailableError('the breaker is open');
            try {
              return await (value as (...args: unknown[]) => Promise<unknown>).apply(target, args);
            } catch (error) {
              if (error instanceof StoreUnavailableError && stuckUntil === 0)
                stuckUntil = Date.now() + 45_000;
              throw error;
            }
          };
        },
      });
    },
    // One Redis pause early on; the run lasts long enough to see calls not recover.
    soak: { durationMs: 55_000, plan: [{ kind: 'redis-pause', at: 4000, holdMs: 1500 }] },
  },
  {
    // A sign-out deletes its connections' records in the step that deletes the session (and
    // records session.ended): this one forgets them, and they outlive the session.
    name: "leaves a signed-out session's connection records behind",
    invariant: 'C6',
    wrap: planted({
      delRecording: (real) => async (keys, outbox) =>
        real.delRecording(
          keys[0]?.endsWith(':session') ? keys.filter((key) => !isRecord(key)) : keys,
          outbox,
        ),
    }),
  },
];

async function soak(
  wrapStore: (store: Store) => Store,
  overrides: Partial<SoakOptions> = {},
): Promise<Verdict> {
  const history = await runSoak({
    topology: 'standalone',
    seed: 'planted',
    durationMs: 25_000,
    users: 6,
    lifetimeS: 6,
    meanGapMs: 0,
    licenseRevocationEveryMs: 0,
    tailMs: 2000,
    inProcess: { wrapStore },
    log: () => {},
    ...overrides,
  });
  return check(history, { recoveryBoundMs: 30_000 });
}

const summary = (verdict: Verdict) =>
  verdict.violations
    .slice(0, 5)
    .map((violation) => `${violation.invariant} ${violation.what}: ${violation.detail}`);

describe('the checker on in-process soaks with a defect planted in the brokers’ store', () => {
  it('passes the clean run on every invariant', async () => {
    const verdict = await soak((store) => store);
    expect(summary(verdict)).toEqual([]);
  });

  it.each(DEFECTS)(
    '$invariant catches a store that $name',
    async ({ invariant, wrap, soak: overrides }) => {
      const verdict = await soak(wrap, overrides);
      expect(
        verdict.byInvariant[invariant],
        `no ${invariant} violation; found: ${summary(verdict).join('; ')}`,
      ).toBeGreaterThan(0);
    },
  );
});
