// The grpo executor (docs/recipe.md §2–§4): setup (setup.ts), then one step (step.ts) per loop turn
// of the shared training loop (commit, checkpoint, stop at step boundaries).
import { runTrainingLoop } from '../common/training-loop.ts';
import { METRIC, rewardKey } from '../metrics.ts';
import type { ExecutorContext, ExecutorResult } from '../types.ts';
import { setupGrpo } from './setup.ts';
import { grpoStep } from './step.ts';

export async function runGrpo(ctx: ExecutorContext): Promise<ExecutorResult> {
  const state = await setupGrpo(ctx);
  const loop = await runTrainingLoop({
    ctx,
    model: state.model,
    doneSteps: state.doneSteps,
    totalSteps: state.spec.steps,
    checkpointInterval: state.spec.checkpointInterval,
    runStep: (step) => grpoStep(ctx, state, step),
  });
  const cache = state.references.stats();
  return {
    summary: {
      steps: loop.lastStep,
      finalReward: loop.lastMetrics[rewardKey('all')] ?? null,
      finalTrainInferenceKl: loop.lastMetrics[METRIC.trainInferenceKl] ?? null,
      checkpointPath: loop.checkpointPath,
      samplerWeightsPath: state.samplerPath,
      referenceCacheHits: cache.hits,
      referenceCacheMisses: cache.misses,
    },
    finalCheckpoint: loop.checkpointPath,
    stopped: loop.stopped,
  };
}
