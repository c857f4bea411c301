// Seeded randomness for data generation and prompt sampling (packages never use Math.random).
// `Rng` is structurally the same as @anneal/rl's, so either generator can be passed in.

export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
}

/** mulberry32: a small, fast 32-bit generator; the same seed always gives the same stream. */
export function seededRng(seed: number): Rng {
  let state = seed >>> 0;
  return {
    next() {
      state = (state + 0x6d2b79f5) >>> 0;
      let z = state;
      z = Math.imul(z ^ (z >>> 15), z | 1);
      z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
      return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** Uniform integer in [lo, hi]. */
export function randInt(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng.next() * (hi - lo + 1));
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick from an empty list');
  return items[randInt(rng, 0, items.length - 1)] as T;
}

/** Fisher–Yates shuffle into a new array. */
export function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = randInt(rng, 0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Index drawn with probability proportional to its weight. */
export function weightedIndex(rng: Rng, weights: readonly number[]): number {
  const total = weights.reduce((a, b) => a + b, 0);
  let u = rng.next() * total;
  for (const [i, w] of weights.entries()) {
    if (u < w) return i;
    u -= w;
  }
  return weights.findLastIndex((w) => w > 0);
}
