// The per-step math through @anneal/rl over the flat layout, as the worker's GRPO step does it
// (apps/worker/src/executors/grpo/train-step.ts): scoreGroup per GRPO group (rewards,
// advantages), perTokenAdvantages for a summing trainer (the worker computes them before
// forward_backward, whose input they are), then one stepTokenMath pass over all tokens (IS
// ratios, KL, ratio statistics, J). Arrays are allocated once and reused per step. Two layouts:
//   - kernelArrays: the batch in WebAssembly memory (createStepBuffers), streamed in place by the
//     SIMD kernel — the worker's layout: it gathers the logprobs straight into these buffers;
//   - plainArrays: ordinary typed arrays (the step's own), for the staged kernel and the scalar path.
import {
  createRng,
  createStepBuffers,
  deriveSeed,
  perTokenAdvantages,
  scoreGroup,
  type GroupOutcomes,
  type RewardConfig,
  type StepBatch,
  type StepTokenStats,
} from '@anneal/rl';
import type { FlatStep } from './data.ts';

export interface StepArrays {
  logpTrain: Float32Array; // (T,)
  logpInfer: Float32Array; // (T,)
  offsets: Int32Array; // (N + 1,)
  advantages: Float64Array; // (N,)
  /** Output of perTokenAdvantages, an ordinary array (the worker copies it into its datums). */
  tokenAdvantages: Float32Array; // (T,)
}

export type TokenMath = (batch: StepBatch) => StepTokenStats;

/** The step's arrays in kernel memory (filled once here: the gather is not part of the step). */
export function kernelArrays(step: FlatStep): StepArrays {
  const buffers = createStepBuffers(step.logpTrain.length, step.offsets.length - 1);
  buffers.logpTrain.set(step.logpTrain);
  buffers.logpInfer.set(step.logpInfer);
  buffers.offsets.set(step.offsets);
  return { ...buffers, tokenAdvantages: new Float32Array(step.logpTrain.length) };
}

/** The step's own typed arrays plus fresh outputs. */
export function plainArrays(step: FlatStep): StepArrays {
  const { logpTrain, logpInfer, offsets } = step;
  return {
    ...{ logpTrain, logpInfer, offsets },
    advantages: new Float64Array(offsets.length - 1),
    tokenAdvantages: new Float32Array(logpTrain.length),
  };
}

/** Zero-copy views of group [start, end)'s outcome columns. */
function columnsOf(step: FlatStep, start: number, end: number): GroupOutcomes {
  const { baseReward, preferenceScore, toolCalls, toolErrors, length, refLength } = step.outcomes;
  return {
    baseReward: baseReward.subarray(start, end),
    preferenceScore: preferenceScore.subarray(start, end),
    toolCalls: toolCalls.subarray(start, end),
    toolErrors: toolErrors.subarray(start, end),
    length: length.subarray(start, end),
    refLength: refLength.subarray(start, end),
  };
}

export function optimisedStep(
  step: FlatStep,
  config: RewardConfig,
  seed: number,
  arrays: StepArrays,
  tokenMath: TokenMath,
): StepTokenStats {
  for (let g = 0; g + 1 < step.groupOffsets.length; g++) {
    const start = step.groupOffsets[g]!;
    const end = step.groupOffsets[g + 1]!;
    const score = scoreGroup(
      columnsOf(step, start, end),
      config,
      createRng(deriveSeed(seed, step.groupIds[g]!)),
    );
    arrays.advantages.set(score.advantage, start);
  }
  perTokenAdvantages(arrays.advantages, arrays.offsets, 'sum', arrays.tokenAdvantages);
  return tokenMath(arrays);
}
