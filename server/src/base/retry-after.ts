const DAY_MS = 24 * 3600 * 1000;

/**
 * A `Retry-After` header (RFC 9110: delay-seconds or an HTTP-date) as milliseconds from `now`,
 * kept between 1 s and a day; undefined when absent or unreadable. The one parser of the broker:
 * the provider's token endpoint and the events' receivers both send it.
 */
export function retryAfterMs(
  header: string | readonly string[] | null | undefined,
  now: number,
): number | undefined {
  const raw = (typeof header === 'string' ? header : header?.[0])?.trim();
  if (raw === undefined || raw === '') return undefined;
  const ms = /^\d+$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 1000), DAY_MS);
}
