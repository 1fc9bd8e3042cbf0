import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
import { trimOldest } from '../base/evicting-map.ts';

/**
 * A token bucket per key, in process: `limit` takes per `windowMs`, refilled continuously. It costs
 * no Redis round trip, so it can sit on the hot path and in front of the session check; the price
 * is that each instance counts on its own (N instances allow N times the limit). A bucket full
 * again is as good as none and is forgotten: when `wait` finds it so, or by a sweep at most once a
 * window for keys that do not come back (the session gate works out a client's address only while
 * some address has a bucket). The oldest keys give way past `maxKeys`, so a flood of new keys
 * cannot grow memory without bound.
 */
export class KeyedBuckets {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #limit: number;
  readonly #perMs: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #windowMs: number;
  #sweepAt: number;

  constructor(options: { limit: number; windowMs: number; now: () => number; maxKeys?: number }) {
    this.#limit = options.limit;
    this.#perMs = options.limit / options.windowMs;
    this.#now = options.now;
    this.#maxKeys = options.maxKeys ?? 100_000;
    this.#windowMs = options.windowMs;
    this.#sweepAt = options.now() + options.windowMs;
  }

  /** Keys with a bucket not yet known to be full again. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Milliseconds until `key` may take again; 0: now. */
  wait(key: string): number {
    const bucket = this.#refilled(key);
    return bucket === undefined || bucket.tokens >= 1
      ? 0
      : Math.ceil((1 - bucket.tokens) / this.#perMs);
  }

  /**
   * Takes one for `key`: 0 when it could, else milliseconds until it can (nothing taken). A bucket
   * full again is taken from, not forgotten and made anew: a session's calls come here every time,
   * and that would be a delete and an insert per call; the sweep forgets it once its key is idle.
   */
  take(key: string): number {
    const now = this.#swept();
    const bucket = this.#buckets.get(key) ?? this.#add(key, now);
    bucket.tokens = this.#tokens(bucket, now);
    bucket.at = now;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) / this.#perMs);
  }

  #add(key: string, now: number): { tokens: number; at: number } {
    const bucket = { tokens: this.#limit, at: now };
    this.#buckets.set(key, bucket);
    trimOldest(this.#buckets, this.#maxKeys);
    return bucket;
  }

  /** The bucket of `key` refilled up to now; a full one is forgotten (as good as a new one). */
  #refilled(key: string): { tokens: number; at: number } | undefined {
    const now = this.#swept();
    const bucket = this.#buckets.get(key);
    if (bucket === undefined) return undefined;
    bucket.tokens = this.#tokens(bucket, now);
    bucket.at = now;
    if (bucket.tokens >= this.#limit) {
      this.#buckets.delete(key);
      return undefined;
    }
    return bucket;
  }

  /** Now, once every bucket full again is forgotten if a window has passed since the last sweep. */
  #swept(): number {
    const now = this.#now();
    if (now < this.#sweepAt) return now;
    for (const [key, bucket] of this.#buckets) {
      if (this.#tokens(bucket, now) >= this.#limit) this.#buckets.delete(key);
    }
    this.#sweepAt = now + this.#windowMs;
    return now;
  }

  #tokens(bucket: { tokens: number; at: number }, now: number): number {
    return Math.min(this.#limit, bucket.tokens + (now - bucket.at) * this.#perMs);
  }
}

/** Express's compiled `trust proxy` setting (`app.get('trust proxy fn')`). */
export type TrustProxy = (address: string, hop: number) => boolean;

/** The client's address as Express's `req.ip` gives it, for requests served outside Express. */
export function clientAddress(trust: TrustProxy): (req: IncomingMessage) => string {
  return (req) => proxyaddr(req, trust);
}
