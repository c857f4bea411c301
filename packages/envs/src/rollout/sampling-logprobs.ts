// The sampling logprobs of a rollout that is to be trained on or scored against the trainer:
// rollouts sampled without them (RolloutConfig.logprobs false, e.g. the frozen reference's) have
// none, and using one there is a bug that must stop the step, never a silent zero.
import type { Rollout } from './types.ts';

export function samplingLogprobs(rollout: Rollout, use: string): Float32Array {
  if (rollout.logprobs === null) {
    throw new Error(`${use}: a rollout sampled without logprobs (a reference rollout?) was given`);
  }
  return rollout.logprobs;
}
