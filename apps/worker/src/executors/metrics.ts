// Names of the step-record metrics the executors commit (protocol StepRecord: flat
// `name -> number | null`), and their mapping onto telemetry's `step:committed` event, so the
// records in Redis and the anneal_run_* series of packages/telemetry (catalogue.ts,
// worker-mapping.ts) carry the same numbers. `null` = the backend did not report it.
import {
  KL_ESTIMATORS,
  REWARD_COMPONENTS,
  STEP_PHASES,
  type KlEstimator,
  type RewardComponent,
  type StepCommitted,
  type StepPhase,
} from '@anneal/telemetry';

export type { StepPhase } from '@anneal/telemetry';

/** Record key of each metric (the `anneal_run_*` series it feeds in the comment). */
export const METRIC = {
  loss: 'loss', // anneal_run_loss
  gradNorm: 'grad_norm', // anneal_run_grad_norm (null when the backend reports none)
  /** k3, the train–inference KL of docs/recipe.md §2 (anneal_run_train_inference_kl{estimator="k3"}). */
  trainInferenceKl: 'train_inference_kl',
  trainInferenceKlK1: 'train_inference_kl/k1', // {estimator="k1"}
  isRatioMean: 'is_ratio/mean', // anneal_run_importance_ratio{stat}
  isRatioMin: 'is_ratio/min',
  isRatioMax: 'is_ratio/max',
  isRatioOutOfRange: 'is_ratio/out_of_range_fraction', // …_out_of_range_ratio
  /** Share of tokens (token level) or sequences (sequence level) masked by masked IS. */
  isMaskedFraction: 'is/masked_fraction',
  /** Share of ratios clipped by truncated IS. */
  isTruncatedFraction: 'is/truncated_fraction',
  objective: 'grpo_objective', // J of docs/recipe.md §2 on the step's batch (before the update)
  preferenceScore: 'preference_score', // anneal_run_preference_score
  toolPenalty: 'tool_penalty', // anneal_run_tool_penalty
  lengthPenalty: 'length_penalty', // anneal_run_length_penalty
  efficiencyPenalty: 'efficiency_penalty', // pen_eff = λ_tool·pen_tool + λ_len·pen_len
  toolCallsPerRollout: 'tool_calls_per_rollout', // anneal_run_tool_calls_per_rollout
  toolErrorsPerRollout: 'tool_errors_per_rollout',
  responseTokens: 'response_tokens', // anneal_run_response_length_tokens
  referenceResponseTokens: 'reference_response_tokens',
  zeroVarianceGroups: 'zero_variance_groups', // anneal_run_zero_variance_groups
  toolBaselineMean: 'tool_baseline/mean', // mean b_g over groups with winners (docs/recipe.md §4)
  groupsWithWinners: 'tool_baseline/groups',
  truncatedRollouts: 'truncated_rollouts',
  rolloutTokens: 'rollout_tokens', // anneal_run_rollout_tokens_total (inc)
  trainedTokens: 'trained_tokens', // anneal_run_trained_tokens_total (inc)
  /** sft/rm: trainer input tokens per train second; grpo: generated tokens per rollout second. */
  tokensPerSecond: 'tokens_per_second',
  stepSeconds: 'step_seconds',
  pairAccuracy: 'pair_accuracy', // rm: training batch pairs ranked as labelled
  heldOutPairAccuracy: 'heldout_pair_accuracy', // rm: P̄ > 0.5 for the preferred (docs/recipe.md §5)
  learningRate: 'learning_rate',
  // eval (docs/recipe.md §8): one step per evaluated checkpoint
  accuracy: 'accuracy',
  accuracyNeedsSearch: 'accuracy/needs_search',
  accuracyToolFree: 'accuracy/tool_free',
  toolCallsNeedsSearch: 'tool_calls_per_rollout/needs_search',
  toolCallsToolFree: 'tool_calls_per_rollout/tool_free', // lower is better (tool efficiency)
  /** Calls that reached the backend (refused ones excluded): at most the budget. */
  toolCallsExecuted: 'tool_calls_per_rollout/executed',
  answeredFraction: 'answered_fraction',
  examples: 'examples',
} as const;

export const rewardKey = (component: RewardComponent): string => `reward/${component}`;
export const baseRewardKey = (component: RewardComponent): string => `base_reward/${component}`;
export const phaseKey = (phase: StepPhase): string => `phase_seconds/${phase}`;
/** b_g of group g of the step (null when the group has no winners). */
export const toolBaselineKey = (group: number): string => `tool_baseline/g${group}`;

type StepRecordMetrics = Readonly<Record<string, number | null>>;

function num(metrics: StepRecordMetrics, key: string): number | undefined {
  const value = metrics[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function byLabel<L extends string>(
  metrics: StepRecordMetrics,
  labels: readonly L[],
  keyOf: (label: L) => string,
): Partial<Record<L, number>> | undefined {
  const entries = labels.flatMap((l) => {
    const v = num(metrics, keyOf(l));
    return v === undefined ? [] : [[l, v] as const];
  });
  return entries.length > 0
    ? (Object.fromEntries(entries) as Partial<Record<L, number>>)
    : undefined;
}

const KL_KEYS: Record<KlEstimator, string> = {
  k1: METRIC.trainInferenceKlK1,
  k3: METRIC.trainInferenceKl,
};

/** A committed step record as telemetry's `step:committed` payload (nulls and NaN dropped). */
export function stepCommittedEvent(
  runId: string,
  step: number,
  atMs: number,
  metrics: StepRecordMetrics,
): StepCommitted {
  const event: StepCommitted = { runId, step, atMs };
  const set = <K extends keyof StepCommitted>(key: K, value: StepCommitted[K] | undefined) => {
    if (value !== undefined) event[key] = value;
  };
  set('loss', num(metrics, METRIC.loss));
  set('gradNorm', num(metrics, METRIC.gradNorm));
  const kl = byLabel(metrics, KL_ESTIMATORS, (e) => KL_KEYS[e]);
  if (kl?.k1 !== undefined && kl.k3 !== undefined)
    set('trainInferenceKl', { k1: kl.k1, k3: kl.k3 });
  const mean = num(metrics, METRIC.isRatioMean);
  const min = num(metrics, METRIC.isRatioMin);
  const max = num(metrics, METRIC.isRatioMax);
  const outside = num(metrics, METRIC.isRatioOutOfRange);
  if (mean !== undefined && min !== undefined && max !== undefined && outside !== undefined) {
    set('importanceRatio', { mean, min, max, outOfRangeFraction: outside });
  }
  set('reward', byLabel(metrics, REWARD_COMPONENTS, rewardKey));
  set('baseReward', byLabel(metrics, REWARD_COMPONENTS, baseRewardKey));
  set('preferenceScore', num(metrics, METRIC.preferenceScore));
  set('toolPenalty', num(metrics, METRIC.toolPenalty));
  set('lengthPenalty', num(metrics, METRIC.lengthPenalty));
  set('toolCallsPerRollout', num(metrics, METRIC.toolCallsPerRollout));
  set('responseTokens', num(metrics, METRIC.responseTokens));
  set('zeroVarianceGroups', num(metrics, METRIC.zeroVarianceGroups));
  set('phaseSeconds', byLabel(metrics, STEP_PHASES, phaseKey));
  set('rolloutTokens', num(metrics, METRIC.rolloutTokens));
  set('trainedTokens', num(metrics, METRIC.trainedTokens));
  return event;
}
