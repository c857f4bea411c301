// A synthetic production-size step: 512 rollouts × 4096 tokens in groups of 16, generated from a
// seed, in both layouts the bench compares: flat typed arrays (what @anneal/rl takes) and arrays of
// objects (what a straightforward implementation would hold). Both carry identical values.
import { createRng, type GroupOutcomes } from '@anneal/rl';

export const ROLLOUTS = 512;
export const TOKENS_PER_ROLLOUT = 4096;
export const GROUP_SIZE = 16;

/** One rollout as a plain object (the baseline's input). */
export interface RolloutRecord {
  group: string;
  baseReward: number;
  preferenceScore: number;
  toolCalls: number;
  toolErrors: number;
  length: number;
  refLength: number;
  logpTrain: number[];
  logpInfer: number[];
}

/** The same step as columns and flat token arrays (the package's input). */
export interface FlatStep {
  groupIds: string[];
  groupOffsets: Int32Array; // (groups + 1,) over rollouts
  outcomes: Record<keyof GroupOutcomes, Float64Array>; // columns over all rollouts (N,)
  logpTrain: Float32Array; // (T,)
  logpInfer: Float32Array; // (T,)
  offsets: Int32Array; // (N + 1,) over tokens
}

export function generateStep(seed: number): FlatStep {
  const rng = createRng(seed);
  const tokens = ROLLOUTS * TOKENS_PER_ROLLOUT;
  const logpInfer = new Float32Array(tokens);
  const logpTrain = new Float32Array(tokens);
  for (let t = 0; t < tokens; t++) {
    const logp = Math.log(1 - 0.999 * rng.next()) * 0.5; // mostly confident tokens, some tails
    logpInfer[t] = logp;
    logpTrain[t] = logp + (rng.next() - 0.5) * 0.08; // small train–inference mismatch
  }
  const offsets = Int32Array.from({ length: ROLLOUTS + 1 }, (_, i) => i * TOKENS_PER_ROLLOUT);
  const column = (draw: () => number) => Float64Array.from({ length: ROLLOUTS }, draw);
  const toolCalls = column(() => rng.int(0, 5));
  const outcomes: FlatStep['outcomes'] = {
    baseReward: column(() => (rng.next() < 0.6 ? 1 : 0)),
    preferenceScore: column(() => rng.next()),
    toolCalls,
    toolErrors: toolCalls.map((calls) => rng.int(0, calls)),
    length: column(() => TOKENS_PER_ROLLOUT),
    refLength: column(() => rng.int(1024, 6144)),
  };
  const groups = ROLLOUTS / GROUP_SIZE;
  const groupOffsets = Int32Array.from({ length: groups + 1 }, (_, g) => g * GROUP_SIZE);
  const groupIds = Array.from({ length: groups }, (_, g) => `prompt-${g}`);
  return { groupIds, groupOffsets, outcomes, logpTrain, logpInfer, offsets };
}

/** The same values as an array of rollout objects. */
export function toRecords(step: FlatStep): RolloutRecord[] {
  return Array.from({ length: ROLLOUTS }, (_, i) => {
    const start = step.offsets[i]!;
    const end = step.offsets[i + 1]!;
    return {
      group: step.groupIds[Math.floor(i / GROUP_SIZE)]!,
      baseReward: step.outcomes.baseReward[i]!,
      preferenceScore: step.outcomes.preferenceScore[i]!,
      toolCalls: step.outcomes.toolCalls[i]!,
      toolErrors: step.outcomes.toolErrors[i]!,
      length: step.outcomes.length[i]!,
      refLength: step.outcomes.refLength[i]!,
      logpTrain: Array.from(step.logpTrain.subarray(start, end)),
      logpInfer: Array.from(step.logpInfer.subarray(start, end)),
    };
  });
}
