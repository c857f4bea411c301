// The per-step math through @anneal/rl over the flat layout: scoreGroup per GRPO group (rewards,
// advantages), then stepTokenMath once over all tokens (IS ratios, KL, ratio statistics, J and the
// per-token advantages for a summing trainer). Output buffers are allocated once and reused.
import {
  createRng,
  deriveSeed,
  scoreGroup,
  stepTokenMath,
  type GroupOutcomes,
  type RewardConfig,
  type StepMetrics,
} from '@anneal/rl';
import type { FlatStep } from './data.ts';

export interface StepBuffers {
  advantages: Float64Array; // (N,)
  tokenAdvantages: Float32Array; // (T,)
}

export function createBuffers(step: FlatStep): StepBuffers {
  return {
    advantages: new Float64Array(step.offsets.length - 1),
    tokenAdvantages: new Float32Array(step.logpTrain.length),
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
  buffers: StepBuffers,
): StepMetrics {
  for (let g = 0; g + 1 < step.groupOffsets.length; g++) {
    const start = step.groupOffsets[g]!;
    const end = step.groupOffsets[g + 1]!;
    const score = scoreGroup(
      columnsOf(step, start, end),
      config,
      createRng(deriveSeed(seed, step.groupIds[g]!)),
    );
    buffers.advantages.set(score.advantage, start);
  }
  return stepTokenMath(
    {
      logpTrain: step.logpTrain,
      logpInfer: step.logpInfer,
      offsets: step.offsets,
      advantages: buffers.advantages,
    },
    'sum',
    { tokenAdvantages: buffers.tokenAdvantages },
  );
}
