/**
 * C6: nothing unbounded. Every key Redis holds is one docs/architecture.md documents and has a
 * TTL; once everyone has signed out and every event is delivered, no key of the soak's sessions is
 * left (but bookkeeping that ends within two minutes: a delivery lease, a lock), and Redis's
 * dataset is back to its baseline, short-lived keys (rate limits' windows, state claims) aside.
 */
import type { RedisEnd } from '../history.ts';
import type { Violation } from './analysis.ts';

/** What the dataset may hold over its baseline once the short-lived keys are counted out. */
export const MEMORY_SLACK_BYTES = 1024 * 1024;

/**
 * `undone`: sessions whose sign-out a failover may have undone (sign-outs.ts): their keys may stay
 * (to their TTL).
 */
export function checkBounds(
  redis: RedisEnd | undefined,
  undone: ReadonlySet<string> = new Set(),
): Violation[] {
  if (!redis)
    return [
      {
        invariant: 'C6',
        what: 'Redis was not surveyed',
        detail: 'the run ended before its survey',
      },
    ];
  const violations: Violation[] = [];
  for (const problem of redis.problems)
    violations.push({
      invariant: 'C6',
      what: 'a key undocumented or without a TTL',
      detail: problem,
    });
  for (const [kind, count] of Object.entries(redis.sessionKeys)) {
    const left = (redis.leftBehind ?? []).filter((line) => line.includes(` ${kind}`));
    const sessions = left.map((line) => /^session (\S+) /.exec(line)?.[1] ?? '');
    if (left.length === count && sessions.every((session) => undone.has(session))) continue;
    violations.push({
      invariant: 'C6',
      what: 'a session key left after sign-out',
      detail: `${kind}: ${count} key(s) of signed-out sessions`,
      trace: left,
    });
  }
  const growth = redis.finalBytes - redis.baselineBytes - redis.expiringBytes;
  if (growth > MEMORY_SLACK_BYTES)
    violations.push({
      invariant: 'C6',
      what: 'Redis memory not back to its baseline',
      detail: `dataset ${redis.finalBytes} bytes against a baseline of ${redis.baselineBytes} (short-lived keys aside): +${growth} beyond the short-lived keys' ${redis.expiringBytes} (slack ${MEMORY_SLACK_BYTES})`,
    });
  return violations;
}
