// The grpo executor (docs/recipe.md §2–§4): setup (setup.ts), then one step (step.ts) per loop turn
// of the shared training loop (commit, checkpoint, stop at step boundaries). The steps take their
// batches from a pipeline that, with rollout.maxPolicyLag k ≥ 1, samples the next k steps'
// batches while a step trains (docs/recipe.md "Pipelined GRPO"); whatever way the loop ends, the
// batches it did not take are aborted and settled before the executor returns. A guardrail
// rollback restores the trainer and the served policy (restore.ts) and starts a new pipeline.
import { runTrainingLoop } from '../common/training-loop.ts';
import { METRIC, rewardKey } from '../metrics.ts';
import type { CommitOutcome, ExecutorContext, ExecutorResult } from '../types.ts';
import { prepareBatch } from './batch.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import { BatchPipeline } from './pipeline.ts';
import { dropProbeAhead } from './probe-launch.ts';
import { restoreGrpo } from './restore.ts';
import { setupGrpo } from './setup.ts';
import { grpoStep } from './step.ts';

export async function runGrpo(ctx: ExecutorContext<'grpo'>): Promise<ExecutorResult> {
  const state = await setupGrpo(ctx);
  const newPipeline = () =>
    new BatchPipeline<PreparedBatch>({
      lag: state.spec.rollout.maxPolicyLag,
      totalSteps: state.spec.steps,
      launch: (step, signal) => prepareBatch(ctx, state, step, signal),
      stopSignal: ctx.stopSignal,
    });
  let pipeline = newPipeline();
  const loop = await runTrainingLoop({
    ctx,
    model: state.model,
    doneSteps: state.doneSteps,
    totalSteps: state.spec.steps,
    checkpointInterval: state.spec.checkpointInterval,
    runStep: (step) => grpoStep(ctx, state, step, pipeline),
    // A guardrail rollback: the batches sampled ahead by discarded weights are dropped, the
    // next ones are drawn by the restored policy in the new generation.
    restore: async (point, epoch) => {
      await Promise.all([pipeline.drain(), dropProbeAhead(state)]);
      const model = await restoreGrpo(ctx, state, point, epoch);
      pipeline = newPipeline();
      return model;
    },
    ...(state.ledger && {
      beforeCommit: (step: number) => state.ledger!.beforeCommit(step),
      afterCommit: (step: number, outcome: CommitOutcome, rollbacks: number) =>
        state.ledger!.afterCommit(step, outcome, rollbacks),
    }),
  }).finally(() => Promise.all([pipeline.drain(), dropProbeAhead(state), state.ledger?.close()]));
  const cache = state.references.stats();
  return {
    summary: {
      steps: loop.lastStep,
      finalReward: loop.lastMetrics[rewardKey('all')] ?? null,
      finalTrainInferenceKl: loop.lastMetrics[METRIC.trainInferenceKl] ?? null,
      checkpointPath: loop.checkpointPath,
      samplerWeightsPath: state.versions.current.path,
      referenceCacheHits: cache.hits,
      referenceCacheMisses: cache.misses,
      referenceCacheEvictions: cache.evictions,
    },
    finalCheckpoint: loop.checkpointPath,
    stopped: loop.stopped,
  };
}
