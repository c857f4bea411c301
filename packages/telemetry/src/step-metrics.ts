// The one table of step metrics: every number a training step records, keyed the way executors
// name it, with the `anneal_run_*` series it feeds (if any). Everything about a step metric is
// derived from its row: the step-record key type (StepRecordMetrics) and its validation schema
// (step-record-schema.ts), the Prometheus registration and the `step:committed` setters
// (catalogue.ts, worker-mapping.ts), docs/metrics.md (doc.ts) and the Run dashboard's panels
// (infra/src/grafana/dashboards/run.ts). Adding a step metric is adding a row here.
//
// The table lives in @anneal/telemetry because it depends on @anneal/protocol (run kinds) and
// protocol depends on schema libraries only: protocol's WireStepMetrics stays the open wire
// envelope (any `name -> number | null`, so records from older or newer workers still parse),
// and the typed record an executor builds is derived here.
import { STEP_USAGE_KEYS, type RunKind } from '@anneal/protocol';
import type { MetricType, MetricUnit } from './metric-types.ts';
import { LABELS, type LabelName } from './labels.ts';

/** Run dashboard rows (docs/recipe.md §7 groups what to watch during training). */
export const STEP_SECTIONS = {
  reward: 'Reward and its components (docs/recipe.md §4)',
  rollouts: 'Rollouts and tools',
  mismatch: 'Train–inference mismatch (docs/recipe.md §2)',
  optimisation: 'Optimisation',
  timing: 'Step timing and throughput',
  pipeline: 'Pipelined GRPO (docs/recipe.md "Pipelined GRPO")',
} as const;
export type StepSection = keyof typeof STEP_SECTIONS;

/** The anneal_run_* series a step metric feeds, and how the Run dashboard shows it. */
export interface StepSeries {
  /** Labels are `run_id`, then the row's `label` when it has one. */
  name: string;
  /**
   * gauge: set to the value of every committed step (the last step wins); counter: the step's
   * value is added once per step number; histogram: observed once per step number.
   */
  type: MetricType;
  /** Histogram upper bounds, strictly increasing, in the metric's unit. */
  buckets?: readonly number[];
  /** The Run dashboard row the panel goes in. */
  section: StepSection;
  /** Panel title. */
  title: string;
  /**
   * A recording rule (infra/prometheus/rules/anneal-recording.yml) the panel selects instead of
   * the raw series: the rule's output has the same run_id and label as the series.
   */
  recorded?: string;
  /** Further recording-rule series drawn on the same panel (e.g. a z-score). */
  also?: readonly { series: string; legend: string }[];
  /** Grafana unit id when the metric unit does not say it (a ratio that is not a fraction). */
  grafanaUnit?: string;
}

/** Label a record key varies over: a Prometheus label with a closed value set, or `group`. */
export type StepLabel = LabelName | 'group';

export interface StepMetricDefinition {
  /**
   * Step-record key. With a `label`: a template holding `{label}` (expanded over the label's
   * values), or one key per label value where keys are irregular.
   */
  key: string | Readonly<Record<string, string>>;
  /**
   * What the key varies over. A Prometheus label must have a closed value set (LABELS);
   * `group` is the GRPO group index, open, so such a row is never a series.
   */
  label?: StepLabel;
  unit: MetricUnit;
  /** Run kinds whose steps record the key. */
  kinds: readonly RunKind[];
  /** One line: what the number is (also the Prometheus help of the series). */
  help: string;
  /** The per-run series it feeds; absent: step record only (GET /v1/runs/{id}/metrics). */
  series?: StepSeries;
}

export type StepMetricTable = Readonly<Record<string, StepMetricDefinition>>;

const TRAINING: readonly RunKind[] = ['sft', 'rm', 'grpo'];

/** Step phases last from milliseconds (embedded, tiny) to tens of minutes (large GPU steps). */
const STEP_PHASE_BUCKETS = [0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

export const STEP_METRICS = {
  // ── optimisation (every training kind) ─────────────────────────────────────────────────
  loss: {
    key: 'loss',
    unit: 'none',
    kinds: TRAINING,
    help: 'Training loss of the last committed step (IS objective, cross-entropy or Bradley-Terry by run kind).',
    series: { name: 'anneal_run_loss', type: 'gauge', section: 'optimisation', title: 'Loss' },
  },
  gradNorm: {
    key: 'grad_norm',
    unit: 'none',
    kinds: TRAINING,
    help: 'Global L2 gradient norm before clipping at the last step (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_grad_norm',
      type: 'gauge',
      section: 'optimisation',
      title: 'Gradient norm',
      also: [{ series: 'run_id:anneal_run_grad_norm:zscore1h', legend: 'z-score (1h)' }],
    },
  },
  learningRate: {
    key: 'learning_rate',
    unit: 'none',
    kinds: TRAINING,
    help: 'Learning rate the optimiser step used.',
  },
  advantageAbsMax: {
    key: 'advantage/abs_max',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Largest |Â_i| of the step’s rollouts (docs/recipe.md §2); non-finite fires the default guardrail (docs/guardrails.md).',
  },
  objective: {
    key: 'grpo_objective',
    unit: 'none',
    kinds: ['grpo'],
    help: 'GRPO objective J of docs/recipe.md §2 on the step’s batch, before the update.',
  },
  pairAccuracy: {
    key: 'pair_accuracy',
    unit: 'ratio',
    kinds: ['rm'],
    help: 'Training-batch pairs the reward model ranks as labelled.',
  },
  heldOutPairAccuracy: {
    key: 'heldout_pair_accuracy',
    unit: 'ratio',
    kinds: ['rm'],
    help: 'Held-out pairs with P̄ > 0.5 for the preferred response (docs/recipe.md §5); checkpoint steps only.',
  },
  // ── train–inference mismatch (grpo) ────────────────────────────────────────────────────
  trainInferenceKl: {
    key: { k1: 'train_inference_kl/k1', k3: 'train_inference_kl' },
    label: 'estimator',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Train-inference KL on sampled tokens, d = logp_infer - logp_train: k1 = mean(d), k3 = mean(exp(-d) - 1 + d) (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_train_inference_kl',
      type: 'gauge',
      section: 'mismatch',
      title: 'Train–inference KL',
    },
  },
  isRatio: {
    key: 'is_ratio/{stat}',
    label: 'stat',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Token-level IS ratio exp(logp_train - logp_infer) over the step: mean, min, max (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_importance_ratio',
      type: 'gauge',
      section: 'mismatch',
      title: 'Importance-sampling ratio',
      grafanaUnit: 'short',
    },
  },
  isRatioOutOfRange: {
    key: 'is_ratio/out_of_range_fraction',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Fraction of the step’s token IS ratios outside [0.5, 2] (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_importance_ratio_out_of_range_ratio',
      type: 'gauge',
      section: 'mismatch',
      title: 'IS ratios outside [0.5, 2]',
    },
  },
  mismatchKl: {
    key: 'mismatch_kl',
    unit: 'none',
    kinds: ['grpo'],
    help: 'k3 train-inference KL of the mismatch alone: pi_train and the sampler at the version the step trains, on tokens it sampled (the fresh rollouts, else a probe); any lag (docs/recipe.md §2.6).',
    series: {
      name: 'anneal_run_mismatch_kl',
      type: 'gauge',
      section: 'mismatch',
      title: 'Train–inference KL (k3), mismatch alone at any lag',
    },
  },
  mismatchKlTokens: {
    key: 'mismatch_kl/tokens',
    unit: 'tokens',
    kinds: ['grpo'],
    help: 'Tokens mismatch_kl was measured on: the step’s fresh rollouts’, or the mismatch probe’s (whole rollouts, rollout.probeFraction of the batch’s tokens).',
  },
  isMaskedFraction: {
    key: 'is/masked_fraction',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Share of tokens (token level) or sequences (sequence level) masked by masked IS.',
  },
  isTruncatedFraction: {
    key: 'is/truncated_fraction',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Share of IS ratios clipped by truncated IS.',
  },
  // ── reward (grpo) ──────────────────────────────────────────────────────────────────────
  reward: {
    key: 'reward/{component}',
    label: 'component',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean composite reward R = r_base * s - pen_eff over the step’s rollouts (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_reward',
      type: 'gauge',
      section: 'reward',
      title: 'Reward R by data component',
    },
  },
  baseReward: {
    key: 'base_reward/{component}',
    label: 'component',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean base reward r_base in [0, 1]: QA answer correct or all rubrics pass (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_base_reward',
      type: 'gauge',
      section: 'reward',
      title: 'Base reward by data component',
    },
  },
  preferenceScore: {
    key: 'preference_score',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean preference score s in [0, 1] against the paired reference rollout (docs/recipe.md §5).',
    series: {
      name: 'anneal_run_preference_score',
      type: 'gauge',
      section: 'reward',
      title: 'Preference score',
    },
  },
  toolPenalty: {
    key: 'tool_penalty',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean anchored tool-call penalty pen_tool (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_tool_penalty',
      type: 'gauge',
      section: 'reward',
      title: 'Tool penalty',
    },
  },
  lengthPenalty: {
    key: 'length_penalty',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean anchored length penalty pen_len (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_length_penalty',
      type: 'gauge',
      section: 'reward',
      title: 'Length penalty',
    },
  },
  efficiencyPenalty: {
    key: 'efficiency_penalty',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean efficiency penalty pen_eff = λ_tool·pen_tool + λ_len·pen_len (docs/recipe.md §4).',
  },
  toolBaselineMean: {
    key: 'tool_baseline/mean',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean tool-call baseline b_g over the groups with winners (docs/recipe.md §4).',
  },
  groupsWithWinners: {
    key: 'tool_baseline/groups',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Groups of the step with at least one winner (an anchored tool baseline).',
  },
  toolBaseline: {
    key: 'tool_baseline/g{group}',
    label: 'group',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Tool-call baseline b_g of group g of the step; null when the group has no winners.',
  },
  // ── rollouts and tools ─────────────────────────────────────────────────────────────────
  toolCallsPerRollout: {
    key: 'tool_calls_per_rollout',
    unit: 'none',
    kinds: ['grpo', 'eval'],
    help: 'Mean number of tool calls per rollout at the last step, failed calls included.',
    series: {
      name: 'anneal_run_tool_calls_per_rollout',
      type: 'gauge',
      section: 'rollouts',
      title: 'Tool calls per rollout',
    },
  },
  toolErrorsPerRollout: {
    key: 'tool_errors_per_rollout',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Mean number of failed tool calls per rollout.',
  },
  responseTokens: {
    key: 'response_tokens',
    unit: 'tokens',
    kinds: ['grpo', 'eval'],
    help: 'Mean generated tokens per rollout at the last step (tool outputs excluded).',
    series: {
      name: 'anneal_run_response_length_tokens',
      type: 'gauge',
      section: 'rollouts',
      title: 'Response length',
    },
  },
  referenceResponseTokens: {
    key: 'reference_response_tokens',
    unit: 'tokens',
    kinds: ['grpo'],
    help: 'Mean generated tokens per paired reference rollout.',
  },
  zeroVarianceGroups: {
    key: 'zero_variance_groups',
    unit: 'none',
    kinds: ['grpo'],
    help: 'GRPO groups of the last step whose rewards all tie (zero advantage, docs/recipe.md §2).',
    series: {
      name: 'anneal_run_zero_variance_groups',
      type: 'gauge',
      section: 'rollouts',
      title: 'Zero-variance groups',
    },
  },
  truncatedRollouts: {
    key: 'truncated_rollouts',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Rollouts of the step cut off at the token or turn limit.',
  },
  // ── timing and throughput ──────────────────────────────────────────────────────────────
  phaseSeconds: {
    key: 'phase_seconds/{phase}',
    label: 'phase',
    unit: 'seconds',
    kinds: TRAINING,
    help: 'Wall time of each phase of a training step.',
    series: {
      name: 'anneal_run_step_phase_duration_seconds',
      type: 'histogram',
      buckets: STEP_PHASE_BUCKETS,
      section: 'timing',
      title: 'Step phase times (mean over 15 minutes)',
      recorded: 'run_id_phase:anneal_run_step_phase_duration_seconds:mean15m',
    },
  },
  stepSeconds: {
    key: 'step_seconds',
    unit: 'seconds',
    kinds: TRAINING,
    help: 'Wall time of the whole step, checkpoint included.',
  },
  rolloutTokens: {
    key: 'rollout_tokens',
    unit: 'tokens',
    kinds: ['grpo'],
    help: 'Tokens sampled by the inference engine for the run; rate() is generation tokens/s.',
    series: {
      name: 'anneal_run_rollout_tokens_total',
      type: 'counter',
      section: 'timing',
      title: 'Generation tokens/s',
      recorded: 'run_id:anneal_run_rollout_tokens:rate5m',
    },
  },
  trainedTokens: {
    key: 'trained_tokens',
    unit: 'tokens',
    kinds: TRAINING,
    help: 'Tokens the trainer took a loss on for the run; rate() is training tokens/s.',
    series: {
      name: 'anneal_run_trained_tokens_total',
      type: 'counter',
      section: 'timing',
      title: 'Training tokens/s',
      recorded: 'run_id:anneal_run_trained_tokens:rate5m',
    },
  },
  tokensPerSecond: {
    key: 'tokens_per_second',
    unit: 'none',
    kinds: TRAINING,
    help: 'sft/rm: trainer input tokens per train second; grpo: generated tokens per rollout second.',
  },
  // ── pipelined GRPO (docs/recipe.md "Pipelined GRPO") ─────────────────────────────────────
  policyLag: {
    key: { mean: 'policy_lag/mean', min: 'policy_lag/min', max: 'policy_lag/max' },
    label: 'stat',
    unit: 'none',
    kinds: ['grpo'],
    help: 'Policy lag of the step’s rollouts in steps: trained version minus sampling version (0 = on-policy).',
    series: {
      name: 'anneal_run_policy_lag',
      type: 'gauge',
      section: 'pipeline',
      title: 'Policy lag (steps)',
    },
  },
  isRatioByLag: {
    key: 'is_ratio_by_lag/{lag}',
    label: 'lag',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Mean token IS ratio exp(logp_train - logp_infer) over the step’s fresh (lag 0) or lagged rollouts; null when there are none.',
    series: {
      name: 'anneal_run_lag_importance_ratio',
      type: 'gauge',
      section: 'pipeline',
      title: 'IS ratio mean, fresh vs lagged rollouts',
      grafanaUnit: 'short',
    },
  },
  trainInferenceKlByLag: {
    key: 'train_inference_kl_by_lag/{lag}',
    label: 'lag',
    unit: 'none',
    kinds: ['grpo'],
    help: 'k3 train-inference KL over the step’s fresh (lag 0) or lagged rollouts; null when there are none (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_lag_train_inference_kl',
      type: 'gauge',
      section: 'pipeline',
      title: 'Train–inference KL (k3), fresh vs lagged rollouts',
    },
  },
  trainerBusy: {
    key: 'busy_fraction/trainer',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Share of the step’s wall time (checkpoint excluded) the trainer was busy: train and weight-sync phases.',
    series: {
      name: 'anneal_run_trainer_busy_ratio',
      type: 'gauge',
      section: 'pipeline',
      title: 'Trainer busy share of the step',
    },
  },
  samplerBusy: {
    key: 'busy_fraction/sampler',
    unit: 'ratio',
    kinds: ['grpo'],
    help: 'Share of the step’s wall time (checkpoint excluded) the sampler was busy: any policy or reference rollout of any batch in flight.',
    series: {
      name: 'anneal_run_sampler_busy_ratio',
      type: 'gauge',
      section: 'pipeline',
      title: 'Sampler busy share of the step',
    },
  },
  // ── eval (docs/recipe.md §8): one step per evaluated checkpoint ────────────────────────
  accuracy: {
    key: 'accuracy',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Share of evaluated questions answered correctly.',
  },
  accuracyNeedsSearch: {
    key: 'accuracy/needs_search',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Accuracy on the questions that need a search.',
  },
  accuracyToolFree: {
    key: 'accuracy/tool_free',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Accuracy on the questions answerable without tools.',
  },
  toolCallsNeedsSearch: {
    key: 'tool_calls_per_rollout/needs_search',
    unit: 'none',
    kinds: ['eval'],
    help: 'Mean tool calls per rollout on the questions that need a search.',
  },
  toolCallsToolFree: {
    key: 'tool_calls_per_rollout/tool_free',
    unit: 'none',
    kinds: ['eval'],
    help: 'Mean tool calls per rollout on tool-free questions; lower is better (tool efficiency).',
  },
  toolCallsExecuted: {
    key: 'tool_calls_per_rollout/executed',
    unit: 'none',
    kinds: ['eval'],
    help: 'Mean tool calls per query sent to the search backend (backend errors included): the calls cost_per_query_usd bills; at most the budget.',
  },
  toolCallsRefused: {
    key: 'tool_calls_per_rollout/refused',
    unit: 'none',
    kinds: ['eval'],
    help: 'Mean tool calls per query the tool answered without the backend: past the cap b, empty or over-long query, malformed; not billed.',
  },
  answeredFraction: {
    key: 'answered_fraction',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Share of rollouts that gave a final answer.',
  },
  examples: {
    key: 'examples',
    unit: 'none',
    kinds: ['eval'],
    help: 'Questions evaluated at this step.',
  },
  // Budget-forced sweep (docs/recipe.md §8.2, §8.3): each eval step is one checkpoint at one
  // tool-call budget b; GET /v1/runs/{id}/results reads these keys back (@anneal/envs
  // EVAL_CELL_KEYS). No anneal_run_* series here (a per-run gauge would flip between cells):
  // the per-cell anneal_run_eval_* gauges are eval-series.ts.
  evalCheckpoint: {
    key: 'eval/checkpoint',
    unit: 'none',
    kinds: ['eval'],
    help: 'Index in the spec `models` of the checkpoint this step evaluated.',
  },
  evalBudget: {
    key: 'eval/budget',
    unit: 'none',
    kinds: ['eval'],
    help: 'Hard cap b on tool calls this step evaluated at (stated in the prompt, enforced by the tool).',
  },
  evalCorrect: {
    key: 'eval/correct',
    unit: 'none',
    kinds: ['eval'],
    help: 'Questions answered correctly (abstaining counts as correct on unanswerable ones).',
  },
  accuracyLow: {
    key: 'accuracy/ci_low',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Lower end of the 95% Wilson interval of accuracy.',
  },
  accuracyHigh: {
    key: 'accuracy/ci_high',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Upper end of the 95% Wilson interval of accuracy.',
  },
  brokenToolCallRate: {
    key: 'broken_tool_call_rate',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Broken tool calls (malformed, empty or over-long query, past the cap b) per emitted call; lower is better.',
  },
  abstention: {
    key: 'abstention/unanswerable',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Share of questions marked unanswerable on which the model abstained.',
  },
  falseAbstention: {
    key: 'abstention/false',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Share of answerable questions the model abstained on (when the dataset marks unanswerable ones).',
  },
  languageMismatch: {
    key: 'language_mismatch',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Share of answers in a determined language other than the question’s (dataset `language`, else detected); lower is better.',
  },
  preferenceWinRate: {
    key: 'preference_win_rate',
    unit: 'ratio',
    kinds: ['eval'],
    help: 'Reward-model win rate of this checkpoint over checkpoint 0 at the same budget: mean σ(s − s_base), position-agnostic.',
  },
  promptTokensPerQuery: {
    key: 'prompt_tokens_per_query',
    unit: 'tokens',
    kinds: ['eval'],
    help: 'Mean prompt tokens billed per question: the whole context is re-sent at every turn.',
  },
  costPerQuery: {
    key: 'cost_per_query_usd',
    unit: 'none',
    kinds: ['eval'],
    help: 'USD per question at the checkpoint’s prices (its own `models[i].prices` over the spec table: prompt, completion tokens, tool calls); null without prices.',
  },
  // ── usage (docs/usage.md): the step's totals, metered with its commit (the keys are
  // protocol's, which prices them) ─────────────────────────────────────────────────────
  usagePromptTokens: {
    key: STEP_USAGE_KEYS.promptTokens,
    unit: 'tokens',
    kinds: ['grpo', 'eval'],
    help: 'Prompt tokens the step sent to the sampler, per request: the first turn of a group (n = G) sends its prompt once, every later turn re-sends its whole context.',
  },
  usageCompletionTokens: {
    key: STEP_USAGE_KEYS.completionTokens,
    unit: 'tokens',
    kinds: ['grpo', 'eval'],
    help: 'Tokens the sampler generated in the step (policy and reference rollouts).',
  },
  usageTrainedTokens: {
    key: STEP_USAGE_KEYS.trainedTokens,
    unit: 'tokens',
    kinds: TRAINING,
    help: 'Tokens the trainer trained on in the step (its `trained_tokens`): the trained tokens billed.',
  },
  usageToolCalls: {
    key: STEP_USAGE_KEYS.toolCalls,
    unit: 'none',
    kinds: ['grpo', 'eval'],
    help: 'Tool calls of the step that reached the search backend (refused ones are not billed).',
  },
} as const satisfies StepMetricTable;

// ── derived: record keys ──────────────────────────────────────────────────────────────────

type LabelValuesOf<L> = L extends 'group'
  ? `${number}`
  : L extends LabelName
    ? (typeof LABELS)[L] extends { values: readonly (infer V extends string)[] }
      ? V
      : never
    : never;

type Fill<K extends string, V extends string> = K extends `${infer A}{${string}}${infer B}`
  ? `${A}${V}${B}`
  : K;

/** The record key of `Row` for label value `V` (or its only key). */
export type RowKey<Row, V extends string = string> = Row extends {
  key: infer K extends string;
}
  ? Fill<K, V>
  : Row extends { key: infer M extends Readonly<Record<string, string>> }
    ? V extends keyof M
      ? M[V]
      : M[keyof M]
    : never;

/** Label values a row's keys vary over (never for a row with one key). */
export type RowLabelValue<Row> = Row extends { label: infer L } ? LabelValuesOf<L> : never;

type RowKeys<Row> = Row extends { label: infer L } ? RowKey<Row, LabelValuesOf<L>> : RowKey<Row>;

type Table = typeof STEP_METRICS;

/** Every key a step record may hold. */
export type StepRecordKey = { [Id in keyof Table]: RowKeys<Table[Id]> }[keyof Table];

/**
 * A step record as executors build it: known keys only (a typo does not compile), each a number
 * or `null` when the backend did not report it (never made up).
 */
export type StepRecordMetrics = { [K in StepRecordKey]?: number | null };

/** Ids of the rows with a single key, and that key: the `METRIC` constant executors use. */
export type SingleKeyIds = {
  [Id in keyof Table]: Table[Id] extends { label: unknown } ? never : Id;
}[keyof Table];

export function singleKeys(): { readonly [Id in SingleKeyIds]: Table[Id]['key'] } {
  const out: Record<string, string> = {};
  for (const [id, row] of Object.entries(STEP_METRICS) as [string, StepMetricDefinition][]) {
    if (row.label === undefined && typeof row.key === 'string') out[id] = row.key;
  }
  return out as { readonly [Id in SingleKeyIds]: Table[Id]['key'] };
}

/** Closed values of a row's label; undefined for a row without one or with an open one. */
export function labelValues(row: StepMetricDefinition): readonly string[] | undefined {
  if (row.label === undefined) return undefined;
  if (typeof row.key !== 'string') return Object.keys(row.key);
  if (row.label === 'group') return undefined;
  return (LABELS[row.label] as { values?: readonly string[] }).values;
}

/** The record key of `row` for label value `value` (rows with one key ignore it). */
export function recordKey<Row extends StepMetricDefinition, V extends RowLabelValue<Row> & string>(
  row: Row,
  value?: V,
): RowKey<Row, V> {
  if (typeof row.key !== 'string') {
    const key = value === undefined ? undefined : row.key[value];
    if (key === undefined) throw new RangeError(`no record key for ${row.label}=${value}`);
    return key as RowKey<Row, V>;
  }
  if (row.label === undefined) return row.key as RowKey<Row, V>;
  if (value === undefined) throw new RangeError(`${row.key}: needs a ${row.label} value`);
  return row.key.replace(`{${row.label}}`, String(value)) as RowKey<Row, V>;
}

export interface RecordBinding {
  key: string;
  /** The row's label and its value for this key; absent for a row with one key. */
  label?: { name: string; value: string };
}

/** Every concrete record key of a row (a template row with an open label has none). */
export function recordBindings(row: StepMetricDefinition): RecordBinding[] {
  if (row.label === undefined) return [{ key: row.key as string }];
  const name = row.label;
  return (labelValues(row) ?? []).map((value) => ({
    key: recordKey(row, value as never),
    label: { name, value },
  }));
}

/** How a row's keys read in docs: `reward/{component}`, or `train_inference_kl/k1 (k1), …`. */
export function keyPattern(row: StepMetricDefinition): string {
  if (typeof row.key === 'string') return row.key;
  return Object.entries(row.key)
    .map(([value, key]) => `${key} (${value})`)
    .join(', ');
}

/** Drops the keys an executor left undefined: the record as committed (`name -> number | null`). */
export function toStepRecord(metrics: StepRecordMetrics): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const [key, value] of Object.entries(metrics)) if (value !== undefined) out[key] = value;
  return out;
}

const keysByKind = new Map<RunKind, ReadonlySet<string>>();

/** Every concrete record key runs of `kind` record: the metrics a guardrail rule may name
 * (rows with an open label, e.g. `tool_baseline/g{group}`, have none). */
export function kindRecordKeys(kind: RunKind): ReadonlySet<string> {
  let keys = keysByKind.get(kind);
  if (!keys) {
    const rows = Object.values(STEP_METRICS as StepMetricTable).filter((r) =>
      r.kinds.includes(kind),
    );
    keys = new Set(rows.flatMap((r) => recordBindings(r).map((b) => b.key)));
    keysByKind.set(kind, keys);
  }
  return keys;
}
