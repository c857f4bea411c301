// The step record of a GRPO step: everything docs/recipe.md §7 watches (reward by component, base
// reward, preference, penalties, tool calls, lengths, zero-variance groups, KL, IS ratios,
// grad norm) plus the logged tool baselines b_g. Means are over the step's rollouts; a
// component with no rollouts this step is null (not reported), never 0.
// trainMetrics is the one place the step math's output (@anneal/rl StepTokenStats, carried in
// TrainOutcome) becomes record keys; rl keeps its own plain return type because it depends on
// nothing, and the keys come from telemetry's step-metric table (via METRIC).
import type { Rollout } from '@anneal/envs';
import type { GroupScore } from '@anneal/rl';
import { STEP_METRICS } from '@anneal/telemetry';
import { LAG_CLASSES, REWARD_COMPONENTS, recordKey, type RewardComponent } from '@anneal/protocol';
import {
  METRIC,
  baseRewardKey,
  rewardKey,
  toolBaselineKey,
  type StepRecordMetrics,
} from '../metrics.ts';
import type { StatsByLag } from './lag-stats.ts';
import type { MismatchKl } from './mismatch-probe.ts';
import type { TrainOutcome } from './train-step.ts';

export interface StepOutcome {
  components: readonly ('qa' | 'rubric')[]; // per group
  groups: readonly (readonly Rollout[])[];
  references: readonly (readonly Rollout[])[];
  baseReward: readonly (readonly number[])[];
  preferenceScore: readonly (readonly number[])[];
  scores: readonly GroupScore[];
}

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;

/** Per-rollout values of every group whose component matches (all groups for 'all'). */
function select<T>(
  outcome: StepOutcome,
  component: RewardComponent,
  values: (g: number) => readonly T[],
): T[] {
  return outcome.groups.flatMap((_, g) =>
    component === 'all' || outcome.components[g] === component ? values(g) : [],
  );
}

export function rewardMetrics(outcome: StepOutcome): StepRecordMetrics {
  const metrics: StepRecordMetrics = {};
  for (const component of REWARD_COMPONENTS) {
    metrics[rewardKey(component)] = mean(
      select(outcome, component, (g) => [...outcome.scores[g]!.reward]),
    );
    metrics[baseRewardKey(component)] = mean(
      select(outcome, component, (g) => outcome.baseReward[g]!),
    );
  }
  const all = <T>(values: (g: number) => readonly T[]) => select(outcome, 'all', values);
  const rollouts = all((g) => outcome.groups[g]!);
  const baselines = outcome.scores.map((s) => s.toolBaseline);
  const anchored = baselines.filter((b): b is number => b !== null);
  Object.assign(metrics, {
    [METRIC.preferenceScore]: mean(all((g) => outcome.preferenceScore[g]!)),
    [METRIC.toolPenalty]: mean(all((g) => [...outcome.scores[g]!.toolPenalty])),
    [METRIC.lengthPenalty]: mean(all((g) => [...outcome.scores[g]!.lengthPenalty])),
    [METRIC.efficiencyPenalty]: mean(all((g) => [...outcome.scores[g]!.efficiencyPenalty])),
    [METRIC.toolCallsPerRollout]: mean(rollouts.map((r) => r.toolCalls)),
    [METRIC.toolErrorsPerRollout]: mean(rollouts.map((r) => r.toolErrors)),
    [METRIC.responseTokens]: mean(rollouts.map((r) => r.generatedTokens)),
    [METRIC.referenceResponseTokens]: mean(
      all((g) => outcome.references[g]!).map((r) => r.generatedTokens),
    ),
    [METRIC.truncatedRollouts]: rollouts.filter((r) => r.truncated).length,
    [METRIC.zeroVarianceGroups]: outcome.scores.filter((s) => s.zeroVariance).length,
    [METRIC.toolBaselineMean]: mean(anchored),
    [METRIC.groupsWithWinners]: anchored.length,
    [METRIC.rolloutTokens]: rollouts.reduce((sum, r) => sum + r.generatedTokens, 0),
  });
  baselines.forEach((b, g) => (metrics[toolBaselineKey(g)] = b));
  return metrics;
}

export function trainMetrics(train: TrainOutcome): StepRecordMetrics {
  return {
    [METRIC.loss]: train.loss,
    [METRIC.objective]: train.objective,
    [METRIC.gradNorm]: train.gradNorm,
    [METRIC.trainInferenceKl]: train.k3,
    [METRIC.trainInferenceKlK1]: train.k1,
    [METRIC.isRatioMean]: train.ratioMean,
    [METRIC.isRatioMin]: train.ratioMin,
    [METRIC.isRatioMax]: train.ratioMax,
    [METRIC.isRatioOutOfRange]: train.ratioFractionOutside,
    [METRIC.isMaskedFraction]: train.maskedFraction,
    [METRIC.isTruncatedFraction]: train.truncatedFraction,
    [METRIC.trainedTokens]: train.tokens,
  };
}

/** Policy lag of the step's rollouts and the IS statistics by lag class (docs/recipe.md
 * "Pipelined GRPO"); a class with no rollouts this step is null. */
export function lagMetrics(lags: readonly number[], byLag: StatsByLag): StepRecordMetrics {
  const metrics: StepRecordMetrics = {
    [recordKey(STEP_METRICS.policyLag, 'mean')]: mean(lags),
    [recordKey(STEP_METRICS.policyLag, 'min')]: lags.length === 0 ? null : Math.min(...lags),
    [recordKey(STEP_METRICS.policyLag, 'max')]: lags.length === 0 ? null : Math.max(...lags),
  };
  for (const lag of LAG_CLASSES) {
    metrics[recordKey(STEP_METRICS.isRatioByLag, lag)] = byLag[lag]?.ratioMean ?? null;
    metrics[recordKey(STEP_METRICS.trainInferenceKlByLag, lag)] = byLag[lag]?.k3 ?? null;
  }
  return metrics;
}

/** The train–inference mismatch alone (docs/recipe.md §2.6): k3 over the step's fresh rollouts
 * when it has any, else over the mismatch probe; null (0 tokens) when it has neither. */
export function mismatchMetrics(byLag: StatsByLag, probe: MismatchKl | null): StepRecordMetrics {
  const measured = byLag.fresh ?? probe;
  return {
    [METRIC.mismatchKl]: measured?.k3 ?? null,
    [METRIC.mismatchKlTokens]: measured?.tokens ?? 0,
  };
}
