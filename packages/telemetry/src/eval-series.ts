// Per-cell eval gauges (docs/evaluation.md "Eval gauges and the Evaluation row"). An eval run
// commits one step per checkpoint × tool-call budget b; a per-run gauge set from each step
// would flip between cells, so these carry the cell as labels: `anneal_run_eval_*{run_id,
// checkpoint, budget}`, set from the step record's `eval/checkpoint` and `eval/budget` keys.
// Cardinality: at most 16 checkpoints × 101 budgets per run (the eval spec's caps, checked on
// every write), one series per cell and gauge; removed with the run's other series when it ends.
import { EvalSpec, TOOL_LIMIT_CAPS } from '@anneal/protocol';
import type { MetricDefinition, MetricUnit } from './metric-types.ts';
import type { StepRecordKey } from '@anneal/protocol';

/** Record keys holding a cell's labels (telemetry's evalCheckpoint and evalBudget rows). */
export const EVAL_CELL_LABEL_KEYS = {
  checkpoint: 'eval/checkpoint',
  budget: 'eval/budget',
} as const satisfies Record<'checkpoint' | 'budget', StepRecordKey>;

/** Label bounds: the eval spec's `models` cap and the tool's call cap (largest budget). */
export const EVAL_CELL_BOUNDS = {
  checkpoints: EvalSpec.properties.models.maxItems as number,
  maxBudget: TOOL_LIMIT_CAPS.maxCallsPerRollout,
} as const;

export interface EvalCellSeries {
  /** Step-record key the gauge is set from. */
  key: StepRecordKey;
  name: string;
  unit: MetricUnit;
  help: string;
}

/** The gauges of one eval cell, in the order docs/metrics.md lists them. */
export const EVAL_CELL_SERIES = [
  {
    key: 'accuracy',
    name: 'anneal_run_eval_accuracy_ratio',
    unit: 'ratio',
    help: 'Eval accuracy of one checkpoint at one tool-call budget b.',
  },
  {
    key: 'accuracy/ci_low',
    name: 'anneal_run_eval_accuracy_ci_low_ratio',
    unit: 'ratio',
    help: 'Lower end of the 95% Wilson interval of the cell’s accuracy.',
  },
  {
    key: 'accuracy/ci_high',
    name: 'anneal_run_eval_accuracy_ci_high_ratio',
    unit: 'ratio',
    help: 'Upper end of the 95% Wilson interval of the cell’s accuracy.',
  },
  {
    key: 'tool_calls_per_rollout',
    name: 'anneal_run_eval_tool_calls_per_query',
    unit: 'none',
    help: 'Mean tool calls emitted per question in the cell, refused ones included.',
  },
  {
    key: 'broken_tool_call_rate',
    name: 'anneal_run_eval_broken_tool_call_ratio',
    unit: 'ratio',
    help: 'Broken tool calls per emitted call in the cell (malformed, bad query, past the cap b); absent without calls.',
  },
  {
    key: 'cost_per_query_usd',
    name: 'anneal_run_eval_cost_per_query_usd',
    unit: 'none',
    help: 'USD per question in the cell at the checkpoint’s prices; absent without prices.',
  },
  {
    key: 'preference_win_rate',
    name: 'anneal_run_eval_preference_win_ratio',
    unit: 'ratio',
    help: 'Reward-model win rate of the checkpoint over checkpoint 0 at the same b; absent without a reward model and for checkpoint 0.',
  },
] as const satisfies readonly EvalCellSeries[];

export type EvalCellSeriesName = (typeof EVAL_CELL_SERIES)[number]['name'];

/** Catalogue entries of the eval gauges (per run, worker-emitted). */
export function evalCellDefinitions(): MetricDefinition[] {
  return EVAL_CELL_SERIES.map((s) => ({
    name: s.name,
    type: 'gauge',
    unit: s.unit,
    scope: 'run',
    labels: ['run_id', 'checkpoint', 'budget'],
    help: s.help,
    emittedBy: ['worker'],
    recordKey: s.key,
  }));
}

/** The cell labels of an eval step record; undefined for a step of another kind. Throws when
 * the cell lies outside the bounds that keep the labels' cardinality bounded. */
export function evalCellLabels(
  metrics: Readonly<Record<string, number | null>>,
): { checkpoint: string; budget: string } | undefined {
  const checkpoint = metrics[EVAL_CELL_LABEL_KEYS.checkpoint];
  const budget = metrics[EVAL_CELL_LABEL_KEYS.budget];
  if (typeof checkpoint !== 'number' || typeof budget !== 'number') return undefined;
  const within = (v: number, max: number) => Number.isInteger(v) && v >= 0 && v <= max;
  if (!within(checkpoint, EVAL_CELL_BOUNDS.checkpoints - 1)) {
    throw new RangeError(
      `step:committed ${EVAL_CELL_LABEL_KEYS.checkpoint} must be an integer in 0..${EVAL_CELL_BOUNDS.checkpoints - 1} (got ${checkpoint})`,
    );
  }
  if (!within(budget, EVAL_CELL_BOUNDS.maxBudget)) {
    throw new RangeError(
      `step:committed ${EVAL_CELL_LABEL_KEYS.budget} must be an integer in 0..${EVAL_CELL_BOUNDS.maxBudget} (got ${budget})`,
    );
  }
  return { checkpoint: String(checkpoint), budget: String(budget) };
}
