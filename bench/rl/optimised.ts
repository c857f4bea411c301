// The per-step math through @anneal/rl over the flat layout: scoreGroup per GRPO group (rewards,
// advantages), then one stepTokenMath pass over all tokens (IS ratios, KL, ratio statistics, J and
// the per-token advantages for a summing trainer). Arrays are allocated once and reused per step.
// Two layouts:
//   - kernelArrays: the batch in WebAssembly memory (createStepBuffers), streamed in place by the
//     SIMD kernel; in production the worker gathers the train logprobs straight into it;
//   - plainArrays: ordinary typed arrays (the step's own), for the staged kernel and the scalar path.
import {
  createRng,
  createStepBuffers,
  deriveSeed,
  scoreGroup,
  type GroupOutcomes,
  type RewardConfig,
  type StepBatch,
  type StepMetrics,
  type StepOutputs,
} from '@anneal/rl';
import type { FlatStep } from './data.ts';

export interface StepArrays {
  logpTrain: Float32Array; // (T,)
  logpInfer: Float32Array; // (T,)
  offsets: Int32Array; // (N + 1,)
  advantages: Float64Array; // (N,)
  tokenAdvantages: Float32Array; // (T,)
}

export type TokenMath = (batch: StepBatch, reduction: 'sum', outputs: StepOutputs) => StepMetrics;

/** The step's arrays in kernel memory (filled once here: the gather is not part of the step). */
export function kernelArrays(step: FlatStep): StepArrays {
  const buffers = createStepBuffers(step.logpTrain.length, step.offsets.length - 1);
  buffers.logpTrain.set(step.logpTrain);
  buffers.logpInfer.set(step.logpInfer);
  buffers.offsets.set(step.offsets);
  return buffers;
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
  const { base, preference, toolCalls, toolErrors, length, refLength } = step.outcomes;
  return {
    base: base.subarray(start, end),
    preference: preference.subarray(start, end),
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
): StepMetrics {
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
  return tokenMath(arrays, 'sum', arrays);
}
