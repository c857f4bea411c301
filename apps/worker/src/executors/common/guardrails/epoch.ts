// What a run's steps depend on that a guardrail rollback changes (docs/guardrails.md "Rollback"):
// the generation (rollbacks taken), the learning-rate factor, and the seed batches are drawn
// with. Generation 0 keeps the spec seed, so a run no rule ever rolled back draws the batches it
// always did; each rollback draws fresh ones, so the step it re-runs never replays the batch
// that fired the rule.

export interface Epoch {
  generation: number;
  /** Factor on the spec learning rate (the product of the rollbacks' learningRateScale). */
  learningRateScale: number;
  /** Seed of the batches (prompts, sampling, reward anchors) of this generation. */
  seed: number;
}

/** Odd multiplier (2^32 / golden ratio) spreading generations over the 31-bit seed space. */
const GENERATION_STRIDE = 0x9e3779b1;

export function epochSeed(seed: number, generation: number): number {
  if (generation === 0) return seed;
  return Number((BigInt(seed) + BigInt(generation) * BigInt(GENERATION_STRIDE)) % 2_147_483_647n);
}

export function epochOf(seed: number, generation: number, learningRateScale: number): Epoch {
  return { generation, learningRateScale, seed: epochSeed(seed, generation) };
}

export const FIRST_EPOCH = (seed: number): Epoch => epochOf(seed, 0, 1);
