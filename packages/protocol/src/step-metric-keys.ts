// The step-metric key table: every number a training step records, keyed the way executors name
// it, with the label its keys vary over and the run kinds that record it. This is the contract
// between the worker (which builds step records from it), the control plane and the operator
// config (which check that a guardrail rule or `keepBest` names a key the run's kind records),
// and @anneal/telemetry, which adds the series half (unit, help, anneal_run_* series, dashboard
// panel) row by row under the same ids. Adding a step metric is adding a row here and its series
// row in packages/telemetry/src/step-metrics.ts (the type system refuses one without the other).
//
// WireStepMetrics (step-record.ts) stays the open wire envelope (any `name -> number | null`, so
// records from older or newer workers still parse); the typed record an executor builds is
// derived from it (step-metric-records.ts).
import type { RunKind } from './run-spec/common.ts';
import { STEP_USAGE_KEYS } from './usage.ts';

/** Train–inference KL estimators of docs/recipe.md §2. */
export const KL_ESTIMATORS = ['k1', 'k3'] as const;
export type KlEstimator = (typeof KL_ESTIMATORS)[number];

export const RATIO_STATS = ['mean', 'min', 'max'] as const;
export type RatioStat = (typeof RATIO_STATS)[number];

/** `all` = every rollout of the step; `qa` / `rubric` = the data-mix components (docs/recipe.md §3, §7). */
export const REWARD_COMPONENTS = ['all', 'qa', 'rubric'] as const;
export type RewardComponent = (typeof REWARD_COMPONENTS)[number];

/** Policy lag of rollouts (docs/recipe.md "Pipelined GRPO"): fresh = sampled by the weights being
 * trained (lag 0), lagged = by an older policy version. */
export const LAG_CLASSES = ['fresh', 'lagged'] as const;
export type LagClass = (typeof LAG_CLASSES)[number];

/** Phases of one GRPO step (docs/architecture.md "One GRPO step"). */
export const STEP_PHASES = [
  'rollout',
  'reward',
  'train',
  'weight_sync',
  'probe',
  'checkpoint',
] as const;
export type StepPhase = (typeof STEP_PHASES)[number];

/** The closed value sets step-record keys vary over (each is also a metrics label of that name). */
export const STEP_LABEL_VALUES = {
  estimator: KL_ESTIMATORS,
  stat: RATIO_STATS,
  component: REWARD_COMPONENTS,
  phase: STEP_PHASES,
  lag: LAG_CLASSES,
} as const satisfies Record<string, readonly string[]>;

/** What a row's keys vary over: a closed value set, or `group` (the GRPO group index, open). */
export type StepLabel = keyof typeof STEP_LABEL_VALUES | 'group';

export interface StepKeyDefinition {
  /**
   * Step-record key. With a `label`: a template holding `{label}` (expanded over the label's
   * values), or one key per label value where keys are irregular.
   */
  key: string | Readonly<Record<string, string>>;
  /** What the key varies over; absent: one key. */
  label?: StepLabel;
  /** Run kinds whose steps record the key. */
  kinds: readonly RunKind[];
}

export type StepKeyTable = Readonly<Record<string, StepKeyDefinition>>;

const TRAINING: readonly RunKind[] = ['sft', 'rm', 'grpo'];

export const STEP_METRIC_KEYS = {
  // ── optimisation (every training kind) ─────────────────────────────────────────────────
  loss: {
    key: 'loss',
    kinds: TRAINING,
  },
  gradNorm: {
    key: 'grad_norm',
    kinds: TRAINING,
  },
  learningRate: {
    key: 'learning_rate',
    kinds: TRAINING,
  },
  advantageAbsMax: {
    key: 'advantage/abs_max',
    kinds: ['grpo'],
  },
  objective: {
    key: 'grpo_objective',
    kinds: ['grpo'],
  },
  pairAccuracy: {
    key: 'pair_accuracy',
    kinds: ['rm'],
  },
  heldOutPairAccuracy: {
    key: 'heldout_pair_accuracy',
    kinds: ['rm'],
  },
  // ── train–inference mismatch (grpo) ────────────────────────────────────────────────────
  trainInferenceKl: {
    key: { k1: 'train_inference_kl/k1', k3: 'train_inference_kl' },
    label: 'estimator',
    kinds: ['grpo'],
  },
  isRatio: {
    key: 'is_ratio/{stat}',
    label: 'stat',
    kinds: ['grpo'],
  },
  isRatioOutOfRange: {
    key: 'is_ratio/out_of_range_fraction',
    kinds: ['grpo'],
  },
  mismatchKl: {
    key: 'mismatch_kl',
    kinds: ['grpo'],
  },
  mismatchKlTokens: {
    key: 'mismatch_kl/tokens',
    kinds: ['grpo'],
  },
  isMaskedFraction: {
    key: 'is/masked_fraction',
    kinds: ['grpo'],
  },
  isTruncatedFraction: {
    key: 'is/truncated_fraction',
    kinds: ['grpo'],
  },
  // ── reward (grpo) ──────────────────────────────────────────────────────────────────────
  reward: {
    key: 'reward/{component}',
    label: 'component',
    kinds: ['grpo'],
  },
  baseReward: {
    key: 'base_reward/{component}',
    label: 'component',
    kinds: ['grpo'],
  },
  preferenceScore: {
    key: 'preference_score',
    kinds: ['grpo'],
  },
  toolPenalty: {
    key: 'tool_penalty',
    kinds: ['grpo'],
  },
  lengthPenalty: {
    key: 'length_penalty',
    kinds: ['grpo'],
  },
  efficiencyPenalty: {
    key: 'efficiency_penalty',
    kinds: ['grpo'],
  },
  toolBaselineMean: {
    key: 'tool_baseline/mean',
    kinds: ['grpo'],
  },
  groupsWithWinners: {
    key: 'tool_baseline/groups',
    kinds: ['grpo'],
  },
  toolBaseline: {
    key: 'tool_baseline/g{group}',
    label: 'group',
    kinds: ['grpo'],
  },
  // ── rollouts and tools ─────────────────────────────────────────────────────────────────
  toolCallsPerRollout: {
    key: 'tool_calls_per_rollout',
    kinds: ['grpo', 'eval'],
  },
  toolErrorsPerRollout: {
    key: 'tool_errors_per_rollout',
    kinds: ['grpo'],
  },
  responseTokens: {
    key: 'response_tokens',
    kinds: ['grpo', 'eval'],
  },
  referenceResponseTokens: {
    key: 'reference_response_tokens',
    kinds: ['grpo'],
  },
  zeroVarianceGroups: {
    key: 'zero_variance_groups',
    kinds: ['grpo'],
  },
  truncatedRollouts: {
    key: 'truncated_rollouts',
    kinds: ['grpo'],
  },
  // ── timing and throughput ──────────────────────────────────────────────────────────────
  phaseSeconds: {
    key: 'phase_seconds/{phase}',
    label: 'phase',
    kinds: TRAINING,
  },
  stepSeconds: {
    key: 'step_seconds',
    kinds: TRAINING,
  },
  rolloutTokens: {
    key: 'rollout_tokens',
    kinds: ['grpo'],
  },
  trainedTokens: {
    key: 'trained_tokens',
    kinds: TRAINING,
  },
  tokensPerSecond: {
    key: 'tokens_per_second',
    kinds: TRAINING,
  },
  // ── pipelined GRPO (docs/recipe.md "Pipelined GRPO") ─────────────────────────────────────
  policyLag: {
    key: { mean: 'policy_lag/mean', min: 'policy_lag/min', max: 'policy_lag/max' },
    label: 'stat',
    kinds: ['grpo'],
  },
  isRatioByLag: {
    key: 'is_ratio_by_lag/{lag}',
    label: 'lag',
    kinds: ['grpo'],
  },
  trainInferenceKlByLag: {
    key: 'train_inference_kl_by_lag/{lag}',
    label: 'lag',
    kinds: ['grpo'],
  },
  trainerBusy: {
    key: 'busy_fraction/trainer',
    kinds: ['grpo'],
  },
  samplerBusy: {
    key: 'busy_fraction/sampler',
    kinds: ['grpo'],
  },
  // ── eval (docs/recipe.md §8): one step per evaluated checkpoint ────────────────────────
  accuracy: {
    key: 'accuracy',
    kinds: ['eval'],
  },
  accuracyNeedsSearch: {
    key: 'accuracy/needs_search',
    kinds: ['eval'],
  },
  accuracyToolFree: {
    key: 'accuracy/tool_free',
    kinds: ['eval'],
  },
  toolCallsNeedsSearch: {
    key: 'tool_calls_per_rollout/needs_search',
    kinds: ['eval'],
  },
  toolCallsToolFree: {
    key: 'tool_calls_per_rollout/tool_free',
    kinds: ['eval'],
  },
  toolCallsExecuted: {
    key: 'tool_calls_per_rollout/executed',
    kinds: ['eval'],
  },
  toolCallsRefused: {
    key: 'tool_calls_per_rollout/refused',
    kinds: ['eval'],
  },
  answeredFraction: {
    key: 'answered_fraction',
    kinds: ['eval'],
  },
  examples: {
    key: 'examples',
    kinds: ['eval'],
  },
  // Budget-forced sweep (docs/recipe.md §8.2, §8.3): each eval step is one checkpoint at one
  // tool-call budget b; GET /v1/runs/{id}/results reads these keys back (@anneal/envs
  // EVAL_CELL_KEYS). No anneal_run_* series here (a per-run gauge would flip between cells):
  // the per-cell anneal_run_eval_* gauges are eval-series.ts.
  evalCheckpoint: {
    key: 'eval/checkpoint',
    kinds: ['eval'],
  },
  evalBudget: {
    key: 'eval/budget',
    kinds: ['eval'],
  },
  evalCorrect: {
    key: 'eval/correct',
    kinds: ['eval'],
  },
  accuracyLow: {
    key: 'accuracy/ci_low',
    kinds: ['eval'],
  },
  accuracyHigh: {
    key: 'accuracy/ci_high',
    kinds: ['eval'],
  },
  brokenToolCallRate: {
    key: 'broken_tool_call_rate',
    kinds: ['eval'],
  },
  abstention: {
    key: 'abstention/unanswerable',
    kinds: ['eval'],
  },
  falseAbstention: {
    key: 'abstention/false',
    kinds: ['eval'],
  },
  languageMismatch: {
    key: 'language_mismatch',
    kinds: ['eval'],
  },
  preferenceWinRate: {
    key: 'preference_win_rate',
    kinds: ['eval'],
  },
  promptTokensPerQuery: {
    key: 'prompt_tokens_per_query',
    kinds: ['eval'],
  },
  costPerQuery: {
    key: 'cost_per_query_usd',
    kinds: ['eval'],
  },
  // ── usage (docs/usage.md): the step's totals, metered with its commit (the keys are
  // protocol's, which prices them) ─────────────────────────────────────────────────────
  usagePromptTokens: {
    key: STEP_USAGE_KEYS.promptTokens,
    kinds: ['grpo', 'eval'],
  },
  usageCompletionTokens: {
    key: STEP_USAGE_KEYS.completionTokens,
    kinds: ['grpo', 'eval'],
  },
  usageTrainedTokens: {
    key: STEP_USAGE_KEYS.trainedTokens,
    kinds: TRAINING,
  },
  usageToolCalls: {
    key: STEP_USAGE_KEYS.toolCalls,
    kinds: ['grpo', 'eval'],
  },
  usageJudgeCalls: {
    key: STEP_USAGE_KEYS.judgeCalls,
    kinds: ['grpo', 'eval'],
  },
  usageScoredTokens: {
    key: STEP_USAGE_KEYS.scoredTokens,
    kinds: ['grpo', 'eval'],
  },
} as const satisfies StepKeyTable;
