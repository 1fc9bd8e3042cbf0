/**
 * Seeded randomness for the soak: every choice the users and the nemesis make comes from one seed,
 * so a run can be told again (the same schedule of faults and the same users' intentions; what the
 * system does with them still depends on timing). sfc32, seeded from a string by a 32-bit hash.
 */
export class Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;
  readonly seed: string;

  constructor(seed: string | number) {
    const text = String(seed);
    this.seed = text;
    this.#a = hash(`${text}:a`);
    this.#b = hash(`${text}:b`);
    this.#c = hash(`${text}:c`);
    this.#d = hash(`${text}:d`);
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A float in [0, 1). */
  next(): number {
    const t = (((this.#a + this.#b) | 0) + this.#d) | 0;
    this.#d = (this.#d + 1) | 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) | 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('nothing to pick from');
    return items[this.int(items.length)]!;
  }

  /** `items` in a random order (a copy). */
  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  }

  /** An independent stream for `label` (a user, the nemesis): the same whatever else was drawn. */
  fork(label: string): Random {
    return new Random(`${this.seed}/${label}`);
  }
}

/** FNV-1a, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
