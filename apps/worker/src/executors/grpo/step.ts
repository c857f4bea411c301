// One GRPO step, phase by phase (docs/architecture.md "One GRPO step"): take the step's batch —
// prompts, policy and reference rollouts, rewards, advantages (batch.ts) — from the pipeline,
// then train -> weight sync. With rollout.maxPolicyLag k ≥ 1 the batches of the next k steps
// are sampled while this one trains (docs/recipe.md "Pipelined GRPO"). The caller
// (training-loop.ts) commits the record and checkpoints.
import { adamParams } from '../common/adam.ts';
import { PhaseTimer } from '../common/phase-timer.ts';
import { METRIC, type StepRecordMetrics } from '../metrics.ts';
import type { ExecutorContext } from '../types.ts';
import { flatAdvantages } from './advantages.ts';
import type { PreparedBatch } from './prepared-batch.ts';
import type { BatchPipeline } from './pipeline.ts';
import { policyServingName, samplerExportName, type GrpoState } from './setup.ts';
import { componentOf } from './sample-prompts.ts';
import type { LaunchedProbe } from './mismatch-probe.ts';
import { launchProbeAhead, probesStep, takeProbe } from './probe-launch.ts';
import {
  lagMetrics,
  mismatchMetrics,
  rewardMetrics,
  trainMetrics,
} from './step-record-builders.ts';
import { scoredAtTemperature } from './scoring-temperature.ts';
import { trainStep } from './train-step.ts';
import { syncWeights } from '../common/weight-sync.ts';
import { samplingUsage, trainingUsage } from '../usage.ts';
import { scoringUsage } from '../scoring-meter.ts';

export async function grpoStep(
  ctx: ExecutorContext,
  state: GrpoState,
  step: number,
  pipeline: BatchPipeline<PreparedBatch>,
): Promise<StepRecordMetrics> {
  const { spec, model, versions } = state;
  const { resources } = ctx;
  const start = performance.now();
  const samplerMark = state.samplerBusy.mark();
  const batch = await pipeline.take(step);
  const timer = new PhaseTimer();
  timer.add('rollout', batch.rolloutSeconds);
  timer.add('reward', batch.rewardSeconds);
  // The weights being trained are version step − 1; the batch was sampled by batch.version.
  const lag = step - 1 - batch.version;
  const rollouts = batch.groups.flat();
  const advantages = flatAdvantages(batch.scores);
  const scorer = scoredAtTemperature(model, spec.rollout.temperature);
  const probe =
    lag > 0 && probesStep(state, step) ? takeProbe(ctx.runId, state, step, batch) : null;
  const train = await timer.time('train', () =>
    probeWhileTraining(probe, () =>
      trainStep(scorer, {
        step,
        rollouts,
        advantages,
        is: spec.importanceSampling,
        reduction: resources.trainer.capabilities.reduction,
        adam: adamParams(spec, state.epoch.learningRateScale),
        lags: rollouts.map(() => lag),
        keepTrainerLogprobs: state.ledger !== null && spec.ledger.tokens,
        ...(probe && { atTrainedWeights: () => probe.beforeUpdate() }),
      }),
    ),
  );
  const name = policyServingName(ctx.runId, spec.rollout.maxPolicyLag, step, state.epoch.rollbacks);
  const syncing = timer.time('weight_sync', () =>
    syncWeights(model, resources.inference, samplerExportName(ctx.runId, step), name),
  );
  // Written while the weights sync; the loop awaits it before the commit (ledger.ts).
  state.ledger?.write({
    step,
    rollbacks: state.epoch.rollbacks,
    batch,
    format: state.format,
    ratios: train.rolloutRatios,
    trainerLogprobs: train.trainerLogprobs,
  });
  const synced = await syncing;
  await versions.adopt({ version: step, name, path: synced.path, policyExport: true });
  launchProbeAhead(ctx.runId, state, step, batch);
  // Scored on a copy of the trained weights, the probe may still run (probe-weights.ts).
  const { rollouts: probeRollouts, kl: probed } = probe
    ? await timer.time('probe', () => probe.scored)
    : { rollouts: [], kl: null };
  const rewards = rewardMetrics({
    components: batch.prompts.map(componentOf),
    groups: batch.groups,
    references: batch.references.map((r) => r.rollouts),
    baseReward: batch.baseReward,
    preferenceScore: batch.preferenceScore,
    scores: batch.scores,
  });
  const rolloutTokens = rewards[METRIC.rolloutTokens] ?? 0;
  // Cached reference groups were billed by the step that sampled them.
  const references = new Set(batch.references.filter((r) => r.sampledAt === step));
  // One first-turn request per group (n = G), per reference group, per probe rollout (n = 1).
  const sampled = [
    ...batch.groups,
    ...[...references].map((r) => r.rollouts),
    ...probeRollouts.map((r) => [r]),
  ];
  const wallSeconds = (performance.now() - start) / 1000;
  const samplerSeconds = (state.samplerBusy.mark() - samplerMark) / 1000;
  return {
    ...rewards,
    ...trainMetrics(train),
    ...lagMetrics(
      rollouts.map(() => lag),
      train.byLag,
    ),
    ...mismatchMetrics(train.byLag, probed),
    ...samplingUsage(sampled),
    ...trainingUsage(train.tokens),
    ...scoringUsage(batch.scoring),
    [METRIC.tokensPerSecond]:
      batch.rolloutSeconds > 0 ? rolloutTokens / batch.rolloutSeconds : null,
    [METRIC.learningRate]: spec.optimizer.learningRate * state.epoch.learningRateScale,
    [METRIC.advantageAbsMax]: absMax(advantages),
    [METRIC.trainerBusy]:
      wallSeconds > 0 ? (timer.get('train') + timer.get('weight_sync')) / wallSeconds : null,
    [METRIC.samplerBusy]: wallSeconds > 0 ? samplerSeconds / wallSeconds : null,
    ...timer.metrics(),
  };
}

/** max |Â_i| (NaN when any is NaN: a guardrail reads it, docs/guardrails.md "Defaults"). */
function absMax(values: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]!);
    if (Number.isNaN(a)) return NaN;
    if (a > max) max = a;
  }
  return max;
}

/** Runs the step's training with the probe (if any) in flight; closes the probe after. */
async function probeWhileTraining<T>(
  probe: LaunchedProbe | null,
  train: () => Promise<T>,
): Promise<T> {
  try {
    return await train();
  } finally {
    probe?.close();
  }
}
