// "Adding a metric is one row": a row added to the step-metric table (in memory, passed as an
// argument) shows up in all four places derived from it — the step record, the anneal_run_*
// series, docs/metrics.md and the Run dashboard — with no other edit.
import { spawnSync } from 'node:child_process';
import {
  Registry,
  STEP_METRICS,
  STEP_SECTIONS,
  buildCatalogue,
  createMetrics,
  lintCatalogue,
  lintStepTable,
  renderMetricsDoc,
  stepRecordError,
  stepRecordSchema,
  type StepMetricTable,
} from '@anneal/telemetry';
import { beforeAll, describe, expect, it } from 'vitest';
import { runDashboard } from '../src/grafana/dashboards/run.ts';
import { checkExpressionsParse } from '../src/parse-check.ts';
import { assertPromtool, promtoolPath } from '../src/promtool.ts';
import { expandGrafanaVariables } from '../src/promql.ts';

const ROW = {
  key: 'entropy/{component}',
  label: 'component',
  unit: 'none',
  kinds: ['grpo'],
  help: 'Mean token entropy of the step’s rollouts.',
  series: { name: 'anneal_run_entropy', type: 'gauge', section: 'rollouts', title: 'Entropy' },
} as const;
const TABLE = { ...STEP_METRICS, entropy: ROW } satisfies StepMetricTable;

beforeAll(() => {
  assertPromtool();
});

describe('one step-metric row', () => {
  it('is a valid row of a valid catalogue', () => {
    expect(lintStepTable(TABLE)).toEqual([]);
    expect(lintCatalogue(buildCatalogue(TABLE))).toEqual([]);
  });

  it('gives the step record its keys, typed and validated', () => {
    const schema = stepRecordSchema(TABLE);
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['entropy/all', 'entropy/qa', 'entropy/rubric']),
    );
    expect(schema.properties['entropy/qa']?.description).toBe(ROW.help);
    expect(stepRecordError({ 'entropy/qa': 'high' }, schema)).toMatch(/^metrics\/entropy\/qa: /);
  });

  it('registers the series and sets it from a committed record', async () => {
    const sink = createMetrics(new Registry(), {
      app: 'worker',
      version: '0.1.0',
      worker: { pool: 'gpu', id: 'w-1' },
      runSeriesGraceMs: 0,
      defaultMetrics: false,
      stepMetrics: TABLE,
    });
    sink.emit('step:committed', {
      runId: 'run_1',
      step: 1,
      atMs: 1000,
      metrics: { 'entropy/qa': 1.25, 'entropy/rubric': null },
    });
    const text = await sink.registry.metrics();
    sink.close();
    expect(text).toContain('# HELP anneal_run_entropy Mean token entropy of the step’s rollouts.');
    expect(text).toContain('# TYPE anneal_run_entropy gauge');
    expect(text).toContain('anneal_run_entropy{run_id="run_1",component="qa"} 1.25');
    expect(text).not.toContain('component="rubric"');
    const lint = spawnSync(promtoolPath(), ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${lint.stdout}${lint.stderr}`.trim()).toBe('');
  });

  it('documents the series and the record key in docs/metrics.md', () => {
    const doc = renderMetricsDoc(TABLE);
    expect(doc).toContain(
      '| `anneal_run_entropy` | gauge | none | `run_id`, `component` (all, qa, rubric) | `entropy/{component}` | Mean token entropy of the step’s rollouts. |',
    );
    expect(doc).toContain('| `entropy/{component}` | none | grpo | `anneal_run_entropy` |');
    expect(renderMetricsDoc()).not.toContain('anneal_run_entropy');
  });

  it('adds a panel to its section’s row of the Run dashboard, with PromQL that parses', () => {
    const board = runDashboard(TABLE);
    const index = board.panels.findIndex((p) => p.title === 'Entropy');
    expect(index).toBeGreaterThan(0);
    const panel = board.panels[index]!;
    expect(panel.targets.map((t) => [t.expr, t.legendFormat])).toEqual([
      ['max by (component) (anneal_run_entropy{run_id="$run_id"})', '{{component}}'],
    ]);
    expect(panel.description).toBe(ROW.help);
    const rowAbove = board.panels.slice(0, index).findLast((p) => p.type === 'row');
    expect(rowAbove?.title).toBe(STEP_SECTIONS.rollouts);
    expect(board.uid).toBe('anneal-run');
    expect(JSON.stringify(runDashboard())).not.toContain('anneal_run_entropy');
    const expr = expandGrafanaVariables(panel.targets[0]!.expr, { run_id: 'run_1' });
    const parsed = checkExpressionsParse(new Map([['Entropy', expr]]));
    expect(parsed.ok, parsed.output).toBe(true);
  });
});
