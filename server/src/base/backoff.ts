/** How a back-off grows: `firstMs` after the first failure, doubling up to `maxMs`. */
export interface BackoffShape {
  firstMs: number;
  maxMs: number;
}

/**
 * The wait after the `attempt`-th failure (1: the first): `firstMs` doubling up to `maxMs`. With
 * `random` (in [0, 1)), jittered to between half and all of it, so that many waiting callers do
 * not all come back at once. The one back-off of the broker: refreshes and event deliveries each
 * give it their shape.
 */
export function backoffMs(attempt: number, shape: BackoffShape, random?: number): number {
  const full = Math.min(shape.firstMs * 2 ** Math.max(0, attempt - 1), shape.maxMs);
  return random === undefined ? full : Math.round(full * (0.5 + random / 2));
}
