// A seeded pseudo-random choice for the fault tests (mulberry32): the step at which a worker is
// killed is random across seeds but the same for a given seed, so a failure can be replayed with
// ANNEAL_RELIABILITY_SEED=<seed printed by the test>.

export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [min, max], inclusive. */
export function pick(random: () => number, min: number, max: number): number {
  if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) {
    throw new Error(`pick: bad range [${min}, ${max}]`);
  }
  return min + Math.floor(random() * (max - min + 1));
}
