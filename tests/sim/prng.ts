/**
 * The simulation's only source of randomness: sfc32 seeded from one number, so a seed decides
 * a whole run (SPEC §20). Never Math.random, never the clock.
 */
export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number, stream = 0) {
    this.#a = 0x9e3779b9 ^ stream;
    this.#b = 0x243f6a88;
    this.#c = 0xb7e15162 ^ Math.imul(stream, 0x85ebca6b);
    this.#d = seed >>> 0;
    // Warm up so that nearby seeds diverge at once.
    for (let i = 0; i < 15; i++) this.next();
  }

  /** A 32-bit unsigned integer. */
  nextU32(): number {
    const a = this.#a;
    const b = this.#b;
    const c = this.#c;
    const d = this.#d;
    const t = (((a + b) | 0) + d) | 0;
    this.#d = (d + 1) | 0;
    this.#a = b ^ (b >>> 9);
    this.#b = (c + (c << 3)) | 0;
    const r = (c << 21) | (c >>> 11);
    this.#c = (r + t) | 0;
    return t >>> 0;
  }

  /** A number in [0, 1). */
  next(): number {
    return this.nextU32() / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** An index chosen with the given weights (all ≥ 0, at least one > 0). */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }
}
