import { BasicClientSideCache, BasicPooledClientSideCache, type RedisArgument } from 'redis';
import { trimOldest } from '../../base/evicting-map.ts';

type ClientSideCacheConfig = NonNullable<ConstructorParameters<typeof BasicClientSideCache>[0]>;

/**
 * Answers of tracked reads, kept in process until Redis says their key changed. node-redis's own
 * client-side cache does the tracking (CLIENT TRACKING on every connection, invalidations pushed
 * by Redis), but answering from it costs a command build, a cache-key string and a structured
 * clone per hit: more than the Redis round trip it saves. So reads go to Redis raw on a miss,
 * and their answers are kept here, dropped on the same invalidations and whenever node-redis
 * drops its cache (an error, a closed connection, a Cluster rediscovery).
 */
export class TrackedAnswers {
  readonly #answers = new Map<string, unknown>();
  /** Keys by a 30-bit hash: a small integer, so keeping one and dropping one leave no garbage. */
  readonly #known = new Map<number, true>();
  readonly #max: number;
  #epoch = 0;
  #suspended = false;
  hits = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Changes with every invalidation: an answer read across one is not kept. */
  get epoch(): number {
    return this.#epoch;
  }

  recall(key: string): unknown {
    if (this.#suspended) return undefined;
    const answer = this.#answers.get(key);
    if (answer !== undefined) this.hits++;
    return answer;
  }

  /** Keep `answer`, read when `epoch` was current, unless anything was invalidated since. */
  remember(key: string, answer: unknown, epoch: number): void {
    if (this.#suspended || epoch !== this.#epoch) return;
    this.#answers.delete(key);
    this.#answers.set(key, answer);
    trimOldest(this.#answers, this.#max);
  }

  /**
   * Whether `key` held a value when this process last read it, among the last `max` keys found.
   * Only such keys are read tracked: Redis remembers every key a tracked read asks for, present or
   * not, until it changes, and the keys of unknown session tokens, or of connections a session
   * does not have, never change (6,000 of them grew its table by 6,000). It is also the cache's
   * admission: a session and its record are kept from their second read on, if that comes while as
   * many sessions as the cache holds (two keys each, the session and its record) were found since.
   * With far more sessions than that, each read once in a while (100,000 in S6), keeping every one
   * would evict another, both wasted.
   * (A hash shared with an unknown key, one in a billion, only gets that key tracked.)
   */
  known(key: string): boolean {
    return this.#known.has(hash(key));
  }

  /** `key` held a value: from its next read on it is read tracked, and its answer kept. */
  found(key: string): void {
    const h = hash(key);
    this.#known.delete(h);
    this.#known.set(h, true);
    trimOldest(this.#known, Math.max(1, this.#max));
  }

  /** One key changed, or (null) any may have: Redis flushed, or a connection was lost. */
  forget(key: string | null): void {
    this.#epoch++;
    if (key === null) this.#answers.clear();
    else this.#answers.delete(key);
  }

  suspend(suspended: boolean): void {
    this.#suspended = suspended;
    this.forget(null);
  }
}

/** FNV-1a, cut to 30 bits: a small integer (a Smi) in V8, stored in a Map without an allocation. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h & 0x3fffffff;
}

// TypeScript's rule for mixins: a constructor of one rest parameter of type any[].
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type CacheClass = new (...args: any[]) => BasicClientSideCache;

/** A node-redis cache class whose instances tell `answers` of everything they drop. */
function withAnswers<Base extends CacheClass>(base: Base) {
  return class extends base {
    readonly answers: TrackedAnswers;

    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    constructor(...args: any[]) {
      super(...args);
      this.answers = new TrackedAnswers((args[0] as ClientSideCacheConfig).maxEntries ?? 0);
    }

    override invalidate(key: RedisArgument | null): void {
      super.invalidate(key);
      this.answers.forget(key === null ? null : key.toString());
    }

    override clear(resetStats?: boolean): void {
      super.clear(resetStats);
      // Undefined only while the base constructor runs.
      (this.answers as TrackedAnswers | undefined)?.forget(null);
    }
  };
}

/** The cache of one standalone client. */
export const TrackedCache = withAnswers(BasicClientSideCache);

/** The cache of the clients of a Sentinel or Cluster pool, which may also be disabled a while. */
export class TrackedPooledCache extends withAnswers(BasicPooledClientSideCache) {
  override disable(): void {
    super.disable();
    this.answers.suspend(true);
  }

  override enable(): void {
    super.enable();
    this.answers.suspend(false);
  }
}
