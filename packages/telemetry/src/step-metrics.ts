// The series half of the step-metric table: for every row of @anneal/protocol's
// STEP_METRIC_KEYS (the key half: record keys, the label they vary over, the run kinds that
// record them), its unit, help and the `anneal_run_*` series it feeds (if any), under the same
// id. STEP_METRICS joins the two; everything else about a step metric is derived from its row:
// its validation schema (step-record-schema.ts), the Prometheus registration and the
// `step:committed` setters (catalogue.ts, worker-mapping.ts), docs/metrics.md (doc.ts) and the Run
// dashboard's panels (infra/src/grafana/dashboards/run.ts). Adding a step metric is adding a key
// row in protocol and its series row here (STEP_SERIES must have exactly the key table's ids).
import {
  STEP_METRIC_KEYS,
  type StepKeyDefinition,
  type StepLabel,
  type StepMetricId,
} from '@anneal/protocol';
import type { MetricType, MetricUnit } from './metric-types.ts';
import type { LabelName } from './labels.ts';

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

/** A step-record label with a closed value set is also a Prometheus label of that name. */
type ClosedStepLabels = Exclude<StepLabel, 'group'>;
const closedStepLabelsAreLabels: ClosedStepLabels extends LabelName ? true : never = true;
void closedStepLabelsAreLabels;

/** The series half of a step metric's row. */
export interface StepSeriesDefinition {
  unit: MetricUnit;
  /** One line: what the number is (also the Prometheus help of the series). */
  help: string;
  /** The per-run series it feeds; absent: step record only (GET /v1/runs/{id}/metrics). */
  series?: StepSeries;
}

/** A whole step-metric row: its keys (protocol) and its series half. */
export type StepMetricDefinition = StepKeyDefinition & StepSeriesDefinition;

export type StepMetricTable = Readonly<Record<string, StepMetricDefinition>>;

/** Step phases last from milliseconds (embedded, tiny) to tens of minutes (large GPU steps). */
const STEP_PHASE_BUCKETS = [0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

const STEP_SERIES = {
  // ── optimisation (every training kind) ─────────────────────────────────────────────────
  loss: {
    unit: 'none',
    help: 'Training loss of the last committed step (IS objective, cross-entropy or Bradley-Terry by run kind).',
    series: { name: 'anneal_run_loss', type: 'gauge', section: 'optimisation', title: 'Loss' },
  },
  gradNorm: {
    unit: 'none',
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
    unit: 'none',
    help: 'Learning rate the optimiser step used.',
  },
  advantageAbsMax: {
    unit: 'none',
    help: 'Largest |Â_i| of the step’s rollouts (docs/recipe.md §2); non-finite fires the default guardrail (docs/guardrails.md).',
  },
  objective: {
    unit: 'none',
    help: 'GRPO objective J of docs/recipe.md §2 on the step’s batch, before the update.',
  },
  pairAccuracy: {
    unit: 'ratio',
    help: 'Training-batch pairs the reward model ranks as labelled.',
  },
  heldOutPairAccuracy: {
    unit: 'ratio',
    help: 'Held-out pairs with P̄ > 0.5 for the preferred response (docs/recipe.md §5); checkpoint steps only.',
  },
  // ── train–inference mismatch (grpo) ────────────────────────────────────────────────────
  trainInferenceKl: {
    unit: 'none',
    help: 'Train-inference KL on sampled tokens, d = logp_infer - logp_train: k1 = mean(d), k3 = mean(exp(-d) - 1 + d) (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_train_inference_kl',
      type: 'gauge',
      section: 'mismatch',
      title: 'Train–inference KL',
    },
  },
  isRatio: {
    unit: 'ratio',
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
    unit: 'ratio',
    help: 'Fraction of the step’s token IS ratios outside [0.5, 2] (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_importance_ratio_out_of_range_ratio',
      type: 'gauge',
      section: 'mismatch',
      title: 'IS ratios outside [0.5, 2]',
    },
  },
  mismatchKl: {
    unit: 'none',
    help: 'k3 train-inference KL of the mismatch alone: pi_train and the sampler at the version the step trains, on tokens it sampled (the fresh rollouts, else a probe); any lag; null on a lagged step rollout.probeEvery skips (docs/recipe.md §2.6).',
    series: {
      name: 'anneal_run_mismatch_kl',
      type: 'gauge',
      section: 'mismatch',
      title: 'Train–inference KL (k3), mismatch alone at any lag',
    },
  },
  mismatchKlTokens: {
    unit: 'tokens',
    help: 'Tokens mismatch_kl was measured on: the step’s fresh rollouts’, or the mismatch probe’s (whole rollouts, rollout.probeFraction of the batch’s tokens); 0 on a lagged step rollout.probeEvery skips.',
  },
  isMaskedFraction: {
    unit: 'ratio',
    help: 'Share of tokens (token level) or sequences (sequence level) masked by masked IS.',
  },
  isTruncatedFraction: {
    unit: 'ratio',
    help: 'Share of IS ratios clipped by truncated IS.',
  },
  // ── reward (grpo) ──────────────────────────────────────────────────────────────────────
  reward: {
    unit: 'none',
    help: 'Mean composite reward R = r_base * s - pen_eff over the step’s rollouts (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_reward',
      type: 'gauge',
      section: 'reward',
      title: 'Reward R by data component',
    },
  },
  baseReward: {
    unit: 'none',
    help: 'Mean base reward r_base in [0, 1]: QA answer correct or all rubrics pass (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_base_reward',
      type: 'gauge',
      section: 'reward',
      title: 'Base reward by data component',
    },
  },
  preferenceScore: {
    unit: 'none',
    help: 'Mean preference score s in [0, 1] against the paired reference rollout (docs/recipe.md §5).',
    series: {
      name: 'anneal_run_preference_score',
      type: 'gauge',
      section: 'reward',
      title: 'Preference score',
    },
  },
  toolPenalty: {
    unit: 'none',
    help: 'Mean anchored tool-call penalty pen_tool (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_tool_penalty',
      type: 'gauge',
      section: 'reward',
      title: 'Tool penalty',
    },
  },
  lengthPenalty: {
    unit: 'none',
    help: 'Mean anchored length penalty pen_len (docs/recipe.md §4).',
    series: {
      name: 'anneal_run_length_penalty',
      type: 'gauge',
      section: 'reward',
      title: 'Length penalty',
    },
  },
  efficiencyPenalty: {
    unit: 'none',
    help: 'Mean efficiency penalty pen_eff = λ_tool·pen_tool + λ_len·pen_len (docs/recipe.md §4).',
  },
  toolBaselineMean: {
    unit: 'none',
    help: 'Mean tool-call baseline b_g over the groups with winners (docs/recipe.md §4).',
  },
  groupsWithWinners: {
    unit: 'none',
    help: 'Groups of the step with at least one winner (an anchored tool baseline).',
  },
  toolBaseline: {
    unit: 'none',
    help: 'Tool-call baseline b_g of group g of the step; null when the group has no winners.',
  },
  // ── rollouts and tools ─────────────────────────────────────────────────────────────────
  toolCallsPerRollout: {
    unit: 'none',
    help: 'Mean number of tool calls per rollout at the last step, failed calls included.',
    series: {
      name: 'anneal_run_tool_calls_per_rollout',
      type: 'gauge',
      section: 'rollouts',
      title: 'Tool calls per rollout',
    },
  },
  toolErrorsPerRollout: {
    unit: 'none',
    help: 'Mean number of failed tool calls per rollout.',
  },
  responseTokens: {
    unit: 'tokens',
    help: 'Mean generated tokens per rollout at the last step (tool outputs excluded).',
    series: {
      name: 'anneal_run_response_length_tokens',
      type: 'gauge',
      section: 'rollouts',
      title: 'Response length',
    },
  },
  referenceResponseTokens: {
    unit: 'tokens',
    help: 'Mean generated tokens per paired reference rollout.',
  },
  zeroVarianceGroups: {
    unit: 'none',
    help: 'GRPO groups of the last step whose rewards all tie (zero advantage, docs/recipe.md §2).',
    series: {
      name: 'anneal_run_zero_variance_groups',
      type: 'gauge',
      section: 'rollouts',
      title: 'Zero-variance groups',
    },
  },
  truncatedRollouts: {
    unit: 'none',
    help: 'Rollouts of the step cut off at the token or turn limit.',
  },
  // ── timing and throughput ──────────────────────────────────────────────────────────────
  phaseSeconds: {
    unit: 'seconds',
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
    unit: 'seconds',
    help: 'Wall time of the whole step, checkpoint included.',
  },
  rolloutTokens: {
    unit: 'tokens',
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
    unit: 'tokens',
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
    unit: 'none',
    help: 'sft/rm: trainer input tokens per train second; grpo: generated tokens per rollout second.',
  },
  // ── pipelined GRPO (docs/recipe.md "Pipelined GRPO") ─────────────────────────────────────
  policyLag: {
    unit: 'none',
    help: 'Policy lag of the step’s rollouts in steps: trained version minus sampling version (0 = on-policy).',
    series: {
      name: 'anneal_run_policy_lag',
      type: 'gauge',
      section: 'pipeline',
      title: 'Policy lag (steps)',
    },
  },
  isRatioByLag: {
    unit: 'ratio',
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
    unit: 'none',
    help: 'k3 train-inference KL over the step’s fresh (lag 0) or lagged rollouts; null when there are none (docs/recipe.md §2).',
    series: {
      name: 'anneal_run_lag_train_inference_kl',
      type: 'gauge',
      section: 'pipeline',
      title: 'Train–inference KL (k3), fresh vs lagged rollouts',
    },
  },
  trainerBusy: {
    unit: 'ratio',
    help: 'Share of the step’s wall time (checkpoint excluded) the trainer was busy: train and weight-sync phases.',
    series: {
      name: 'anneal_run_trainer_busy_ratio',
      type: 'gauge',
      section: 'pipeline',
      title: 'Trainer busy share of the step',
    },
  },
  samplerBusy: {
    unit: 'ratio',
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
    unit: 'ratio',
    help: 'Share of evaluated questions answered correctly.',
  },
  accuracyNeedsSearch: {
    unit: 'ratio',
    help: 'Accuracy on the questions that need a search.',
  },
  accuracyToolFree: {
    unit: 'ratio',
    help: 'Accuracy on the questions answerable without tools.',
  },
  toolCallsNeedsSearch: {
    unit: 'none',
    help: 'Mean tool calls per rollout on the questions that need a search.',
  },
  toolCallsToolFree: {
    unit: 'none',
    help: 'Mean tool calls per rollout on tool-free questions; lower is better (tool efficiency).',
  },
  toolCallsExecuted: {
    unit: 'none',
    help: 'Mean tool calls per query sent to the search backend (backend errors included): the calls cost_per_query_usd bills; at most the budget.',
  },
  toolCallsRefused: {
    unit: 'none',
    help: 'Mean tool calls per query the tool answered without the backend: past the cap b, empty or over-long query, malformed; not billed.',
  },
  answeredFraction: {
    unit: 'ratio',
    help: 'Share of rollouts that gave a final answer.',
  },
  examples: {
    unit: 'none',
    help: 'Questions evaluated at this step.',
  },
  // Budget-forced sweep (docs/recipe.md §8.2, §8.3): each eval step is one checkpoint at one
  // tool-call budget b; GET /v1/runs/{id}/results reads these keys back (@anneal/envs
  // EVAL_CELL_KEYS). No anneal_run_* series here (a per-run gauge would flip between cells):
  // the per-cell anneal_run_eval_* gauges are eval-series.ts.
  evalCheckpoint: {
    unit: 'none',
    help: 'Index in the spec `models` of the checkpoint this step evaluated.',
  },
  evalBudget: {
    unit: 'none',
    help: 'Hard cap b on tool calls this step evaluated at (stated in the prompt, enforced by the tool).',
  },
  evalCorrect: {
    unit: 'none',
    help: 'Questions answered correctly (abstaining counts as correct on unanswerable ones).',
  },
  accuracyLow: {
    unit: 'ratio',
    help: 'Lower end of the 95% Wilson interval of accuracy.',
  },
  accuracyHigh: {
    unit: 'ratio',
    help: 'Upper end of the 95% Wilson interval of accuracy.',
  },
  brokenToolCallRate: {
    unit: 'ratio',
    help: 'Broken tool calls (malformed, empty or over-long query, past the cap b) per emitted call; lower is better.',
  },
  abstention: {
    unit: 'ratio',
    help: 'Share of questions marked unanswerable on which the model abstained.',
  },
  falseAbstention: {
    unit: 'ratio',
    help: 'Share of answerable questions the model abstained on (when the dataset marks unanswerable ones).',
  },
  languageMismatch: {
    unit: 'ratio',
    help: 'Share of answers in a determined language other than the question’s (dataset `language`, else detected); lower is better.',
  },
  preferenceWinRate: {
    unit: 'ratio',
    help: 'Reward-model win rate of this checkpoint over checkpoint 0 at the same budget: mean σ(s − s_base), position-agnostic.',
  },
  promptTokensPerQuery: {
    unit: 'tokens',
    help: 'Mean prompt tokens billed per question: the whole context is re-sent at every turn.',
  },
  costPerQuery: {
    unit: 'none',
    help: 'USD per question at the checkpoint’s prices (its own `models[i].prices` over the spec table: prompt, completion tokens, tool calls); null without prices.',
  },
  // ── usage (docs/usage.md): the step's totals, metered with its commit (the keys are
  // protocol's, which prices them) ─────────────────────────────────────────────────────
  usagePromptTokens: {
    unit: 'tokens',
    help: 'Prompt tokens the step sent to the sampler, per request: the first turn of a group (n = G) sends its prompt once, every later turn re-sends its whole context.',
  },
  usageCompletionTokens: {
    unit: 'tokens',
    help: 'Tokens the sampler generated in the step (policy and reference rollouts).',
  },
  usageTrainedTokens: {
    unit: 'tokens',
    help: 'Tokens the trainer trained on in the step (its `trained_tokens`): the trained tokens billed.',
  },
  usageToolCalls: {
    unit: 'none',
    help: 'Tool calls of the step that reached the search backend (refused ones are not billed).',
  },
  usageJudgeCalls: {
    unit: 'none',
    help: 'Requests the step sent to the LLM judge (one per graded answer with judged rubrics; eval `judge: llm`: one per answer).',
  },
  usageScoredTokens: {
    unit: 'tokens',
    help: 'Tokens the step sent to the reward model: prompt and response of every rollout it scored.',
  },
} as const satisfies { readonly [Id in StepMetricId]: StepSeriesDefinition };

type Joined = {
  readonly [Id in StepMetricId]: (typeof STEP_METRIC_KEYS)[Id] & (typeof STEP_SERIES)[Id];
};

/** The whole table: each key row of protocol joined with its series row. */
export const STEP_METRICS: Joined = Object.fromEntries(
  (Object.keys(STEP_METRIC_KEYS) as StepMetricId[]).map((id) => [
    id,
    { ...STEP_METRIC_KEYS[id], ...STEP_SERIES[id] },
  ]),
) as Joined;
