import { describe, expect, it } from 'vitest';
import { TrackedAnswers, TrackedCache, TrackedPooledCache } from './tracked.ts';

describe('TrackedAnswers', () => {
  it('keeps an answer until its key is invalidated', () => {
    const answers = new TrackedAnswers(10);
    answers.remember('k', 'v', answers.epoch);
    expect(answers.recall('k')).toBe('v');
    answers.forget('other');
    expect(answers.recall('k')).toBe('v');
    answers.forget('k');
    expect(answers.recall('k')).toBeUndefined();
  });

  it('does not keep an answer read across an invalidation', () => {
    const answers = new TrackedAnswers(10);
    const epoch = answers.epoch;
    answers.forget('k');
    answers.remember('k', 'stale', epoch);
    expect(answers.recall('k')).toBeUndefined();
  });

  it('drops everything on a flush, and keeps nothing while suspended', () => {
    const answers = new TrackedAnswers(10);
    answers.remember('a', 1, answers.epoch);
    answers.forget(null);
    expect(answers.recall('a')).toBeUndefined();
    answers.suspend(true);
    answers.remember('b', 2, answers.epoch);
    expect(answers.recall('b')).toBeUndefined();
    answers.suspend(false);
    answers.remember('b', 2, answers.epoch);
    expect(answers.recall('b')).toBe(2);
  });

  it('knows the last max keys found: a session and its record are admitted while as many as the cache holds were found since', () => {
    const answers = new TrackedAnswers(2);
    for (const key of ['a', 'b', 'c']) answers.found(key);
    expect(['a', 'b', 'c', 'd'].map((key) => answers.known(key))).toEqual([
      false,
      true,
      true,
      false,
    ]);
    answers.found('b');
    answers.found('d');
    expect(['b', 'c', 'd'].map((key) => answers.known(key))).toEqual([true, false, true]);
  });

  it('keeps at most its size, dropping the oldest', () => {
    const answers = new TrackedAnswers(2);
    for (const key of ['a', 'b', 'c']) answers.remember(key, key, answers.epoch);
    expect(['a', 'b', 'c'].map((key) => answers.recall(key))).toEqual([undefined, 'b', 'c']);
  });
});

describe.each([
  ['TrackedCache', TrackedCache],
  ['TrackedPooledCache', TrackedPooledCache],
])('%s', (_name, Cache) => {
  it("forgets what node-redis's cache drops: one key, a flush, a lost connection", () => {
    const cache = new Cache({ maxEntries: 10 });
    const fill = () => {
      for (const key of ['a', 'b']) cache.answers.remember(key, key, cache.answers.epoch);
    };
    fill();
    cache.invalidate(Buffer.from('a'));
    expect(cache.answers.recall('a')).toBeUndefined();
    expect(cache.answers.recall('b')).toBe('b');
    cache.invalidate(null);
    expect(cache.answers.recall('b')).toBeUndefined();
    fill();
    cache.onError();
    expect(cache.answers.recall('a')).toBeUndefined();
    fill();
    cache.onClose();
    expect(cache.answers.recall('b')).toBeUndefined();
  });
});

describe('TrackedPooledCache', () => {
  it('answers nothing while the pool has it disabled (a Cluster rediscovery)', () => {
    const cache = new TrackedPooledCache({ maxEntries: 10 });
    cache.answers.remember('a', 'a', cache.answers.epoch);
    cache.disable();
    expect(cache.answers.recall('a')).toBeUndefined();
    cache.enable();
    cache.answers.remember('a', 'a', cache.answers.epoch);
    expect(cache.answers.recall('a')).toBe('a');
  });
});
