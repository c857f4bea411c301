// Seeded pseudo-random numbers for weight init and sampling (packages never use Math.random).
// mulberry32: 32-bit state, period 2^32, good enough statistical quality for both uses.

/** Uniform floats in [0, 1) from a 32-bit seed; the same seed always gives the same stream. */
export type Rng = () => number;

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal sample (Box–Muller). */
export function normal(rng: Rng): number {
  const u1 = 1 - rng(); // (0, 1]: log is finite
  const u2 = rng();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}
