import { parseRetryAfter } from '@baton/shared';

const DAY_MS = 24 * 3600 * 1000;

/**
 * A `Retry-After` header (read by @baton/shared's `parseRetryAfter`: delay-seconds or an
 * HTTP-date) as milliseconds from `now`, kept between 1 s and a day; undefined when absent or
 * unreadable. The broker's one reading of it: the provider's token endpoint and the events'
 * receivers both send it.
 */
export function retryAfterMs(
  header: string | readonly string[] | null | undefined,
  now: number,
): number | undefined {
  const at = parseRetryAfter(header, now);
  return at === undefined ? undefined : Math.min(Math.max(at - now, 1000), DAY_MS);
}
