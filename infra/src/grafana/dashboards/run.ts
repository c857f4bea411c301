// Run dashboard: what docs/recipe.md §7 says to watch during training, for one run_id. Below a
// few headline stats, every per-run step series gets a panel derived from its row in the
// step-metric table (packages/telemetry/src/step-metrics.ts), grouped in one dashboard row per
// section: a metric added to the table shows up here without editing this file. Last, the
// Evaluation row of an eval run's per-cell gauges (evaluation.ts).
import {
  STEP_METRICS,
  STEP_SECTIONS,
  type StepMetricDefinition,
  type StepMetricTable,
  type StepSection,
  type StepSeries,
} from '@anneal/telemetry';
import {
  dashboard,
  variable,
  type GrafanaDashboard,
  type PanelSpec,
  type Query,
} from '../panels.ts';
import { EVALUATION_ROW, evaluationPanels } from './evaluation.ts';

/** Series of the selected run; max() merges the brief overlap when a run moves between workers. */
const run = (metric: string, extra = '') => `${metric}{run_id="$run_id"${extra}}`;

/** `max by (label) (…)`, or `max(…)` without a label. */
const maxBy = (label: string | undefined, expr: string) =>
  label === undefined ? `max(${expr})` : `max by (${label}) (${expr})`;

const rate = (metric: string) => `rate(${run(metric)}[$__rate_interval])`;

function mainQuery(row: StepMetricDefinition, series: StepSeries): Query {
  const label = row.label;
  const legend = label === undefined ? series.title : `{{${label}}}`;
  if (series.recorded) return { expr: maxBy(label, run(series.recorded)), legend };
  switch (series.type) {
    case 'gauge':
      return { expr: maxBy(label, run(series.name)), legend };
    case 'counter': {
      const by = label === undefined ? '' : ` by (${label})`;
      return { expr: `sum${by} (${rate(series.name)})`, legend };
    }
    case 'histogram': {
      // mean observation over the dashboard's rate window
      const by = label === undefined ? '' : ` by (${label})`;
      const sum = `sum${by} (${rate(`${series.name}_sum`)})`;
      const count = `sum${by} (${rate(`${series.name}_count`)})`;
      return { expr: `${sum} / ${count}`, legend };
    }
  }
}

function grafanaUnit(row: StepMetricDefinition, series: StepSeries): string {
  if (series.grafanaUnit) return series.grafanaUnit;
  if (series.type === 'counter') return 'short'; // a rate: units per second
  if (row.unit === 'seconds') return 's';
  if (row.unit === 'ratio') return 'percentunit';
  return 'short';
}

/** The panel of one table row with a series. */
export function stepPanel(row: StepMetricDefinition, series: StepSeries): PanelSpec {
  const also = (series.also ?? []).map((a) => ({ expr: run(a.series), legend: a.legend }));
  return {
    title: series.title,
    description: row.help,
    unit: grafanaUnit(row, series),
    ...(row.unit === 'none' && series.type === 'gauge' ? {} : { min: 0 }),
    ...(series.type === 'histogram' && row.label !== undefined ? { stacked: true } : {}),
    queries: [mainQuery(row, series), ...also],
  };
}

/** One dashboard row per section (table order within it), each table series a panel. */
export function stepPanels(table: StepMetricTable): PanelSpec[] {
  const rows = Object.values(table);
  return (Object.keys(STEP_SECTIONS) as StepSection[]).flatMap((section) => {
    const panels = rows.flatMap((row) =>
      row.series?.section === section ? [stepPanel(row, row.series)] : [],
    );
    if (panels.length === 0) return [];
    return [{ kind: 'row' as const, title: STEP_SECTIONS[section], queries: [] }, ...panels];
  });
}

/** Headline numbers of the run: progress, liveness, throughput, loss. */
const HEADLINE: readonly PanelSpec[] = [
  {
    title: 'Step',
    kind: 'stat',
    width: 6,
    height: 4,
    queries: [{ expr: `max(${run('anneal_run_step')})` }],
  },
  {
    title: 'Since last step',
    kind: 'stat',
    unit: 's',
    width: 6,
    height: 4,
    queries: [{ expr: `time() - max(${run('anneal_run_last_step_timestamp_seconds')})` }],
  },
  {
    title: 'Generation tokens/s',
    kind: 'stat',
    unit: 'short',
    width: 6,
    height: 4,
    queries: [{ expr: `sum(${run('run_id:anneal_run_rollout_tokens:rate5m')})` }],
  },
  {
    title: 'Loss (last step)',
    kind: 'stat',
    width: 6,
    height: 4,
    queries: [{ expr: `max(${run('anneal_run_loss')})` }],
  },
  {
    // docs/guardrails.md: a rollback shows here, and as the step going back in `Step`.
    title: 'Guardrail firings by action',
    kind: 'timeseries',
    unit: 'short',
    width: 24,
    height: 5,
    queries: [
      {
        expr: `sum by (action) (increase(${run('anneal_run_guardrail_firings_total')}[$__rate_interval]))`,
        legend: '{{action}}',
      },
    ],
  },
];

export function runDashboard(table: StepMetricTable = STEP_METRICS): GrafanaDashboard {
  return dashboard({
    uid: 'anneal-run',
    title: 'Anneal / Run',
    description: `One run: reward and its components, KL, IS ratios, gradients, timing; for an eval run, the ${EVALUATION_ROW} row.`,
    variables: [variable('run_id', 'Run', 'anneal_run_step')],
    panels: [...HEADLINE, ...stepPanels(table), ...evaluationPanels()],
  });
}
