// Seeded randomness for data generation and prompt sampling (packages never use Math.random).
// The generator is @anneal/rl's (xoshiro128**); these are small helpers over it.
import { createRng } from '@anneal/rl';
import type { Rng } from '@anneal/rl';

export type { Rng };

export function seededRng(seed: number): Rng {
  return createRng(seed);
}

/** Uniform integer in [lo, hi]. */
export function randInt(rng: Rng, lo: number, hi: number): number {
  return rng.int(lo, hi);
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick from an empty list');
  return items[rng.int(0, items.length - 1)] as T;
}

/** Fisher–Yates shuffle into a new array. */
export function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
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
