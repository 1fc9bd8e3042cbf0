/**
 * What a new key costs once a bounded map is full and churning: the failed-session limiter's
 * buckets (KeyedBuckets, 100,000 keys) and the tracked answers (TrackedAnswers, 10,000), each new
 * key evicting the oldest. Prints µs per new key over successive rounds: flat when eviction is
 * O(1), growing with the slots deleted since the map last rehashed when it is not.
 *
 *   node test/bench/evict.ts [--rounds 8] [--per-round 20000]
 */
import { parseArgs } from 'node:util';
import { KeyedBuckets } from '../../server/src/http/limits.ts';
import { TrackedAnswers } from '../../server/src/store/redis/tracked.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    'per-round': { type: 'string', default: '20000' },
  },
});
const rounds = Number(values.rounds);
const perRound = Number(values['per-round']);

function measure(name: string, full: number, insert: (n: number) => void): void {
  for (let n = 0; n < full; n++) insert(n);
  const figures: string[] = [];
  let next = full;
  for (let round = 0; round < rounds; round++) {
    const start = process.hrtime.bigint();
    for (let n = 0; n < perRound; n++) insert(next++);
    figures.push((Number(process.hrtime.bigint() - start) / 1000 / perRound).toFixed(2));
  }
  console.log(`${name}: µs per new key, round by round: ${figures.join(' ')}`);
}

const now = () => 0;
const buckets = new KeyedBuckets({ limit: 30, windowMs: 60_000, now, maxKeys: 100_000 });
measure('KeyedBuckets (100,000 keys)', 100_000, (n) => buckets.take(`10.${n}`));
const answers = new TrackedAnswers(10_000);
measure('TrackedAnswers (10,000 keys)', 10_000, (n) =>
  answers.remember(`baton:{s${n}}:session`, 'x', answers.epoch),
);
