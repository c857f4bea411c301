// One GRPO step, phase by phase (docs/architecture.md "One GRPO step"): sample
// prompts -> policy and reference rollouts -> rewards -> advantages -> train -> weight sync.
// The caller (training-loop.ts) commits the record and checkpoints.
import { adamParams } from '../common/adam.ts';
import { stepRng } from '../common/mix-batch.ts';
import { PhaseTimer } from '../common/phase-timer.ts';
import type { StepMetrics } from '../common/training-loop.ts';
import { METRIC } from '../metrics.ts';
import type { ExecutorContext } from '../types.ts';
import { flatAdvantages } from './advantages.ts';
import { baseRewards, preferenceScores, rewardConfig, scoreGroups } from './rewards.ts';
import { policyRollouts } from './rollouts.ts';
import { componentOf, samplePrompts } from './sample-prompts.ts';
import { adoptPolicyExport, samplerExportName, type GrpoState } from './setup.ts';
import { rewardMetrics, trainMetrics } from './step-metrics.ts';
import { scoredAtTemperature } from './scoring-temperature.ts';
import { trainStep } from './train-step.ts';
import { syncWeights } from './weight-sync.ts';

export async function grpoStep(
  ctx: ExecutorContext,
  state: GrpoState,
  step: number,
): Promise<StepMetrics> {
  const { spec, model } = state;
  const { resources } = ctx;
  const timer = new PhaseTimer();
  const groupSize = spec.rollout.groupSize;
  const prompts = samplePrompts(
    state.pools,
    spec.rollout.promptsPerStep,
    state.format,
    stepRng(spec.seed, 'prompts', step),
  );
  const [groups, references] = await timer.time('rollout', () =>
    Promise.all([
      policyRollouts(state.policyEnv, prompts, groupSize, spec.seed, step),
      state.references.forPrompts(prompts, groupSize, step),
    ]),
  );
  const { base, preference, scores } = await timer.time('reward', async () => {
    const base = await baseRewards(prompts, groups, resources.judge);
    const preference = await preferenceScores(resources.rewardScorer, prompts, groups, references);
    const inputs = groups.map((rollouts, g) => ({
      rollouts,
      references: references[g]!.rollouts,
      base: base[g]!,
      preference: preference[g]!,
    }));
    return { base, preference, scores: scoreGroups(inputs, rewardConfig(spec), spec.seed, step) };
  });
  const train = await timer.time('train', () =>
    trainStep(scoredAtTemperature(model, spec.rollout.temperature), {
      rollouts: groups.flat(),
      advantages: flatAdvantages(scores),
      is: spec.importanceSampling,
      reduction: resources.trainer.capabilities.reduction,
      adam: adamParams(spec),
    }),
  );
  const synced = await timer.time('weight_sync', () =>
    syncWeights(model, resources.inference, samplerExportName(ctx.runId, step), state.policyName),
  );
  await adoptPolicyExport(state, synced.path);
  const rewards = rewardMetrics({
    components: prompts.map(componentOf),
    groups,
    references: references.map((r) => r.rollouts),
    base,
    preference,
    scores,
  });
  const rolloutSeconds = timer.get('rollout');
  const rolloutTokens = rewards[METRIC.rolloutTokens] ?? 0;
  return {
    ...rewards,
    ...trainMetrics(train),
    [METRIC.tokensPerSecond]: rolloutSeconds > 0 ? rolloutTokens / rolloutSeconds : null,
    [METRIC.learningRate]: spec.optimizer.learningRate,
    ...timer.metrics(),
  };
}
