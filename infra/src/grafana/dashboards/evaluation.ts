// The Run dashboard's Evaluation row (docs/evaluation.md "Eval gauges and the Evaluation row"):
// an eval run's per-cell gauges (anneal_run_eval_*{run_id, checkpoint, budget}, one series per
// checkpoint × tool-call budget b) drawn against b rather than time. Each panel reads the
// latest value of every cell (instant queries as tables) and Grafana transformations pivot
// them: one curve per checkpoint over b, a cost–accuracy scatter, a table of every cell.
import { EVAL_CELL_SERIES, type EvalCellSeriesName } from '@anneal/telemetry';
import type { GrafanaTransformation, PanelSpec, Query } from '../panels.ts';

export const EVALUATION_ROW = 'Evaluation (docs/recipe.md §8)';

const seriesOf = (name: EvalCellSeriesName) => {
  const s = EVAL_CELL_SERIES.find((x) => x.name === name);
  if (!s) throw new Error(`${name} is not an eval cell series`);
  return s;
};

/** Every cell of the selected run; max() merges the brief overlap of a run moving workers. */
const cells = (name: EvalCellSeriesName): Query => ({
  expr: `max by (checkpoint, budget) (${seriesOf(name).name}{run_id="$run_id"})`,
});

/** Field Grafana's grouping-to-matrix names its row column: `row\column`. */
const MATRIX_X = 'budget\\checkpoint';

/**
 * One curve per checkpoint over b: the table of (checkpoint, budget, value) pivoted to a row per
 * budget and a column per checkpoint, b made numeric and sorted, columns named `checkpoint N`.
 */
const CURVE_BY_BUDGET: readonly GrafanaTransformation[] = [
  {
    id: 'groupingToMatrix',
    options: { columnField: 'checkpoint', rowField: 'budget', valueField: 'Value' },
  },
  {
    id: 'convertFieldType',
    options: { conversions: [{ targetField: MATRIX_X, destinationType: 'number' }], fields: {} },
  },
  { id: 'sortBy', options: { sort: [{ field: MATRIX_X, desc: false }], fields: {} } },
  { id: 'renameByRegex', options: { regex: '^(\\d+)$', renamePattern: 'checkpoint $1' } },
];

function curvePanel(title: string, name: EvalCellSeriesName, unit: string): PanelSpec {
  return {
    title,
    description: `${seriesOf(name).help} One curve per checkpoint over the budget b (x).`,
    kind: 'trend',
    unit,
    min: 0,
    width: 8,
    queries: [cells(name)],
    transformations: CURVE_BY_BUDGET,
    options: { xField: MATRIX_X },
    fieldUnits: { [MATRIX_X]: 'none' },
  };
}

/** Value columns of merged instant tables are `Value #<refId>`. */
const valueOf = (refId: string) => `Value #${refId}`;

const COST = 'cost per query (USD)';

/** Per-cell table columns, in query order (refIds A, B, …). */
const TABLE_COLUMNS: readonly [EvalCellSeriesName, string][] = [
  ['anneal_run_eval_accuracy_ratio', 'accuracy'],
  ['anneal_run_eval_accuracy_ci_low_ratio', '95% low'],
  ['anneal_run_eval_accuracy_ci_high_ratio', '95% high'],
  ['anneal_run_eval_tool_calls_per_query', 'tool calls / query'],
  ['anneal_run_eval_broken_tool_call_ratio', 'broken-call rate'],
  ['anneal_run_eval_cost_per_query_usd', COST],
];

const REF_IDS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** The Evaluation row: a row header and its panels. */
export function evaluationPanels(): PanelSpec[] {
  return [
    { kind: 'row', title: EVALUATION_ROW, queries: [] },
    curvePanel('Accuracy vs tool-call budget', 'anneal_run_eval_accuracy_ratio', 'percentunit'),
    {
      title: 'Cost vs accuracy',
      description:
        'Every cell (checkpoint × budget b) at its cost per query (x) and accuracy (y), one colour per checkpoint: the cost–accuracy trade-off of docs/recipe.md §8.3.',
      kind: 'xychart',
      unit: 'percentunit',
      min: 0,
      width: 8,
      queries: [
        cells('anneal_run_eval_accuracy_ratio'),
        cells('anneal_run_eval_cost_per_query_usd'),
      ],
      transformations: [
        { id: 'merge', options: {} },
        {
          id: 'organize',
          options: {
            excludeByName: { Time: true },
            renameByName: { [valueOf('A')]: 'accuracy', [valueOf('B')]: COST },
          },
        },
        { id: 'partitionByValues', options: { fields: ['checkpoint'], keepFields: false } },
      ],
      options: { seriesMapping: 'auto', dims: { x: COST }, mapping: 'auto' },
      fieldUnits: { [COST]: 'currencyUSD' },
    },
    curvePanel(
      'Broken tool-call rate vs budget',
      'anneal_run_eval_broken_tool_call_ratio',
      'percentunit',
    ),
    {
      title: 'Eval cells',
      description:
        'Every evaluated cell: accuracy with its 95% Wilson interval, tool calls, broken-call rate and cost per query (GET /v1/runs/{id}/results has the same numbers).',
      kind: 'table',
      width: 24,
      queries: TABLE_COLUMNS.map(([name]) => cells(name)),
      transformations: [
        { id: 'merge', options: {} },
        {
          id: 'organize',
          options: {
            excludeByName: { Time: true },
            indexByName: { checkpoint: 0, budget: 1 },
            renameByName: Object.fromEntries(
              TABLE_COLUMNS.map(([, column], i) => [valueOf(REF_IDS[i]!), column]),
            ),
          },
        },
        {
          id: 'convertFieldType',
          options: {
            conversions: ['checkpoint', 'budget'].map((f) => ({
              targetField: f,
              destinationType: 'number',
            })),
            fields: {},
          },
        },
      ],
      options: { sortBy: [{ displayName: 'budget', desc: false }] },
      fieldUnits: {
        accuracy: 'percentunit',
        '95% low': 'percentunit',
        '95% high': 'percentunit',
        'broken-call rate': 'percentunit',
        [COST]: 'currencyUSD',
      },
    },
  ];
}
