// What a run's steps depend on that a guardrail rollback changes (docs/guardrails.md "Rollback"):
// the rollbacks taken, the learning-rate factor, and the seed batches are drawn with. With no
// rollback the spec seed stays, so a run no rule ever rolled back draws the batches it
// always did; each rollback draws fresh ones, so the step it re-runs never replays the batch
// that fired the rule.

export interface Epoch {
  /** Rollbacks the run has taken (the step records' `rollbacks`). */
  rollbacks: number;
  /** Factor on the spec learning rate (the product of the rollbacks' learningRateScale). */
  learningRateScale: number;
  /** Seed of the batches (prompts, sampling, reward anchors) after these rollbacks. */
  seed: number;
}

/** Odd multiplier (2^32 / golden ratio) spreading rollback counts over the 31-bit seed space. */
const ROLLBACK_SEED_STRIDE = 0x9e3779b1;

export function epochSeed(seed: number, rollbacks: number): number {
  if (rollbacks === 0) return seed;
  return Number((BigInt(seed) + BigInt(rollbacks) * BigInt(ROLLBACK_SEED_STRIDE)) % 2_147_483_647n);
}

export function epochOf(seed: number, rollbacks: number, learningRateScale: number): Epoch {
  return { rollbacks, learningRateScale, seed: epochSeed(seed, rollbacks) };
}

export const FIRST_EPOCH = (seed: number): Epoch => epochOf(seed, 0, 1);
