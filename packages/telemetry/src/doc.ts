// Renders the catalogue and the step-metric table as docs/metrics.md (deterministic; a test
// compares the file to this).
import { buildCatalogue, type MetricDefinition, type MetricScope } from './catalogue.ts';
import { FORBIDDEN_LABELS, LABELS, type LabelDefinition } from './labels.ts';
import { STEP_METRICS, type StepMetricTable } from './step-metrics.ts';
import { keyPattern } from '@anneal/protocol';

const SCOPE_TITLES: Record<MetricScope, string> = {
  run: 'Per run (worker; removed when the run ends)',
  worker: 'Per worker process',
  'control-plane': 'Control plane',
  process: 'Every Anneal process',
};

const escapeCell = (text: string) => text.replaceAll('|', '\\|');

function labelCell(m: MetricDefinition): string {
  if (m.labels.length === 0) return '';
  return m.labels
    .map((label) => {
      const values = m.labelValues?.[label] ?? (LABELS[label] as LabelDefinition).values;
      return values ? `\`${label}\` (${values.join(', ')})` : `\`${label}\``;
    })
    .join(', ');
}

const code = (text: string) => `\`${text}\``;

/** Per-run series show the record key they are set from; the others which app emits them. */
function metricRow(m: MetricDefinition): string {
  const buckets = m.buckets ? ` Buckets: ${m.buckets.join(', ')}.` : '';
  const source =
    m.scope === 'run' ? (m.recordKey ? code(m.recordKey) : '') : m.emittedBy.join(', ');
  return `| ${code(m.name)} | ${m.type} | ${m.unit} | ${labelCell(m)} | ${source} | ${escapeCell(m.help)}${buckets} |`;
}

function stepRecordSection(steps: StepMetricTable): string[] {
  const lines = [
    '',
    '## Step record',
    '',
    'Every key a training step records (`GET /v1/runs/{id}/metrics`, `step:committed` events), with',
    'the series it sets. `{label}` stands for each value of the label; `null` means the backend',
    'did not report the value. Generated from `packages/telemetry/src/step-metrics.ts`.',
    '',
    '| record key | unit | run kinds | series | help |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const row of Object.values(steps)) {
    const series = row.series ? code(row.series.name) : '';
    lines.push(
      `| ${code(keyPattern(row))} | ${row.unit} | ${row.kinds.join(', ')} | ${series} | ${escapeCell(row.help)} |`,
    );
  }
  return lines;
}

export function renderMetricsDoc(
  steps: StepMetricTable = STEP_METRICS,
  metrics: readonly MetricDefinition[] = buildCatalogue(steps),
): string {
  const lines = [
    '# Anneal metrics',
    '',
    '<!-- Generated from packages/telemetry/src/catalogue.ts and step-metrics.ts by',
    '     `npm run gen:metrics-doc -w @anneal/telemetry`. Do not edit by hand:',
    '     a test fails when this file and the catalogue differ. -->',
    '',
    'Every `anneal_*` series Anneal exports. Names follow the Prometheus conventions: base units',
    '(`_seconds`, `_bytes`, `_ratio`, `_tokens`), `_total` on counters only, histograms rather than',
    'summaries. Per-run series carry `run_id` and disappear shortly after the run ends; no label',
    `ever carries a per-prompt or per-user id (${FORBIDDEN_LABELS.map((l) => `\`${l}\``).join(', ')} are rejected).`,
    'Gauges of a step hold the value of the last committed step; the full per-step history is',
    'in the run record (`GET /v1/runs/{id}/metrics`, keys in [Step record](#step-record)).',
  ];
  const scopes = Object.keys(SCOPE_TITLES) as MetricScope[];
  for (const scope of scopes) {
    const rows = metrics.filter((m) => m.scope === scope);
    if (rows.length === 0) continue;
    lines.push('', `## ${SCOPE_TITLES[scope]}`, '');
    const source = scope === 'run' ? 'record key' : 'emitted by';
    lines.push(`| name | type | unit | labels | ${source} | help |`);
    lines.push('| --- | --- | --- | --- | --- | --- |');
    for (const m of rows) lines.push(metricRow(m));
  }
  lines.push(...stepRecordSection(steps));
  lines.push('', '## Labels', '', '| label | values | meaning |', '| --- | --- | --- |');
  for (const [name, def] of Object.entries(LABELS) as [string, LabelDefinition][]) {
    const values = def.values ? def.values.join(', ') : 'open (bounded by configuration)';
    lines.push(`| \`${name}\` | ${values} | ${escapeCell(def.description)} |`);
  }
  lines.push('');
  return lines.join('\n');
}
