/**
 * A `Retry-After` header (RFC 9110: delay-seconds or an HTTP-date) as the instant to try again, in
 * epoch milliseconds and never before `now`; undefined when absent or unreadable. The one parser:
 * the extension reads the broker's, the broker its provider's and its event receivers'. Node's
 * incoming headers may hold a list: its first counts.
 */
export function parseRetryAfter(
  header: string | readonly string[] | null | undefined,
  now: number,
): number | undefined {
  const value = (typeof header === 'string' ? header : header?.[0])?.trim();
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value)) return now + Number(value) * 1000;
  // An HTTP date has a weekday and a month name; anything else ("-5", "1.5", "") is unreadable.
  if (!/[a-z]/i.test(value)) return undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(date, now);
}
