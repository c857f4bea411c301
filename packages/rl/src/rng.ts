// Seeded pseudo-random numbers for the recipe's random choices (docs/recipe.md §4: "b_g comes from a
// seeded RNG"; §3 prompt mix). packages/rl never calls Math.random: callers pass an Rng.
// Generator: xoshiro128** (Blackman & Vigna), state seeded through splitmix32.

/** A deterministic random source. */
export interface Rng {
  /** Uniform float in [0, 1) with 32 bits of resolution. */
  next(): number;
  /** Uniform integer in [lo, hi], both inclusive, without modulo bias. */
  int(lo: number, hi: number): number;
  /** Uniform unsigned 32-bit integer. */
  nextUint32(): number;
}

const TWO_POW_32 = 4294967296;

function splitmix32(state: number): { state: number; value: number } {
  const nextState = (state + 0x9e3779b9) | 0;
  let z = nextState;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return { state: nextState, value: (z ^ (z >>> 16)) >>> 0 };
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** Create a generator from any safe integer seed (both 32-bit halves are used). */
export function createRng(seed: number): Rng {
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be a safe integer, got ${seed}`);
  let mix = (seed >>> 0) ^ Math.imul(Math.floor(seed / TWO_POW_32) >>> 0, 0x27d4eb2d);
  const seeds: number[] = [];
  for (let k = 0; k < 4; k++) {
    const step = splitmix32(mix);
    mix = step.state;
    seeds.push(step.value);
  }
  let [s0, s1, s2, s3] = seeds as [number, number, number, number];
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1; // xoshiro's only forbidden state
  const nextUint32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  return {
    next: () => nextUint32() / TWO_POW_32,
    int: (lo, hi) => uniformInt(nextUint32, lo, hi),
    nextUint32,
  };
}

function uniformInt(nextUint32: () => number, lo: number, hi: number): number {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || hi < lo) {
    throw new RangeError(`int(lo, hi) needs integers with lo <= hi, got ${lo}, ${hi}`);
  }
  const span = hi - lo + 1;
  if (span > TWO_POW_32) throw new RangeError(`int(lo, hi) range too wide: ${span}`);
  const limit = TWO_POW_32 - (TWO_POW_32 % span); // reject the biased tail
  let draw = nextUint32();
  while (draw >= limit) draw = nextUint32();
  return lo + (draw % span);
}

/**
 * A child seed for an independent stream named by `key` (e.g. a GRPO group id), so one group's
 * draws never depend on which other groups exist. FNV-1a over the key's UTF-16 units, mixed with
 * the parent seed.
 */
export function deriveSeed(seed: number, key: string): number {
  let hash = 0x811c9dc5;
  for (let k = 0; k < key.length; k++) {
    hash = Math.imul(hash ^ key.charCodeAt(k), 0x01000193);
  }
  const seedLow = seed >>> 0;
  const seedHigh = Math.floor(seed / TWO_POW_32) >>> 0;
  return splitmix32(hash ^ seedLow ^ Math.imul(seedHigh, 0x27d4eb2d)).value;
}
