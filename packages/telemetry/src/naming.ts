// Prometheus naming and label rules for the catalogue (https://prometheus.io/docs/practices/naming/).
// `lintCatalogue` and `lintStepTable` return every violation so a test can list them all at once.
import { METRIC_NAME_PATTERN } from '@anneal/protocol';
import type { MetricDefinition, MetricUnit } from './catalogue.ts';
import { FORBIDDEN_LABELS, LABELS, type LabelDefinition } from './labels.ts';
import type { StepMetricTable } from './step-metrics.ts';
import { labelValues, recordBindings } from '@anneal/protocol';

const NAME_PATTERN = /^anneal_[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const LABEL_PATTERN = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const UNIT_SUFFIXES: Record<Exclude<MetricUnit, 'none'>, string> = {
  seconds: '_seconds',
  bytes: '_bytes',
  ratio: '_ratio',
  tokens: '_tokens',
};
/** Non-base units Prometheus tells us to convert (ms → seconds, percent → ratio, …). */
const NON_BASE_UNIT_WORDS = [
  'milliseconds',
  'microseconds',
  'nanoseconds',
  'ms',
  'minutes',
  'hours',
  'days',
  'kilobytes',
  'megabytes',
  'gigabytes',
  'kb',
  'mb',
  'gb',
  'percent',
  'percentage',
];
const RESERVED_LABELS = ['le', 'quantile', 'job', 'instance'];
const VALID_TYPES = ['counter', 'gauge', 'histogram'];

export interface Violation {
  metric: string;
  rule: string;
  message: string;
}

function lintName(m: MetricDefinition, out: Violation[]): void {
  const add = (rule: string, message: string) => out.push({ metric: m.name, rule, message });
  if (!NAME_PATTERN.test(m.name)) {
    add('name-format', 'must match anneal_<snake_case> (lower case, single underscores)');
  }
  if (!VALID_TYPES.includes(m.type)) {
    add('type', `type ${String(m.type)} is not counter|gauge|histogram (no summaries)`);
  }
  const isCounter = m.type === 'counter';
  if (isCounter !== m.name.endsWith('_total')) {
    add('total-suffix', isCounter ? 'counters end in _total' : 'only counters end in _total');
  }
  const stem = isCounter ? m.name.slice(0, -'_total'.length) : m.name;
  for (const [unit, suffix] of Object.entries(UNIT_SUFFIXES)) {
    const declared = m.unit === unit;
    if (declared && !stem.endsWith(suffix)) {
      add('unit-suffix', `unit ${unit} needs the suffix ${suffix}${isCounter ? '_total' : ''}`);
    }
    if (!declared && stem.endsWith(suffix)) {
      add('unit-suffix', `name ends in ${suffix} but the declared unit is ${m.unit}`);
    }
  }
  const words = m.name.split('_');
  const nonBase = words.find((w) => NON_BASE_UNIT_WORDS.includes(w));
  if (nonBase) add('base-units', `"${nonBase}" is not a base unit (use seconds, bytes, ratio)`);
  if (m.type === 'histogram') {
    const b = m.buckets ?? [];
    if (b.length === 0) add('buckets', 'histograms declare their buckets');
    if (b.some((v, i) => i > 0 && v <= (b[i - 1] ?? -Infinity))) {
      add('buckets', 'buckets must be strictly increasing');
    }
  } else if (m.buckets) {
    add('buckets', 'only histograms have buckets');
  }
  if (m.help.trim() === '' || m.help.includes('\n')) add('help', 'help is one non-empty line');
  if (m.emittedBy.length === 0) add('emitted-by', 'at least one app emits each metric');
}

function lintLabels(
  m: MetricDefinition,
  labels: Record<string, LabelDefinition>,
  out: Violation[],
): void {
  const add = (rule: string, message: string) => out.push({ metric: m.name, rule, message });
  const forbidden: readonly string[] = FORBIDDEN_LABELS;
  if (new Set(m.labels).size !== m.labels.length) add('labels-unique', 'duplicate label');
  for (const label of m.labels) {
    if (!LABEL_PATTERN.test(label)) add('label-format', `label ${label} is not snake_case`);
    if (forbidden.includes(label)) {
      add('forbidden-label', `label ${label} has unbounded cardinality (ids go to logs)`);
    }
    if (RESERVED_LABELS.includes(label)) add('reserved-label', `label ${label} is reserved`);
    if (!(label in labels)) add('label-undeclared', `label ${label} is not in LABELS`);
  }
  for (const label of Object.keys(m.labelValues ?? {})) {
    if (!(m.labels as readonly string[]).includes(label)) {
      add('label-values', `labelValues names ${label}, which the metric does not carry`);
    }
  }
  const hasRunId = m.labels.includes('run_id');
  if (m.scope === 'run' && m.labels[0] !== 'run_id') {
    add('run-scope', 'per-run metrics carry run_id as their first label');
  }
  if (m.scope !== 'run' && hasRunId) add('run-scope', 'run_id only on per-run series');
  if (m.scope === 'run' && !m.name.startsWith('anneal_run_')) {
    add('run-scope', 'per-run metrics are named anneal_run_*');
  }
  if (m.scope !== 'run' && m.name.startsWith('anneal_run_')) {
    add('run-scope', 'anneal_run_* names are reserved for per-run metrics');
  }
  if (m.scope === 'run' && !(m.emittedBy.length === 1 && m.emittedBy[0] === 'worker')) {
    add('run-scope', 'per-run series are emitted by the worker that holds the run');
  }
  if (m.scope === 'worker' && (m.labels[0] !== 'pool' || m.labels[1] !== 'worker')) {
    add('worker-scope', 'per-worker metrics start with the labels pool, worker');
  }
}

/** Every rule violation in `metrics`; empty when the catalogue is clean. */
export function lintCatalogue(
  metrics: readonly MetricDefinition[],
  labels: Record<string, LabelDefinition> = LABELS,
): Violation[] {
  const out: Violation[] = [];
  const seen = new Set<string>();
  for (const m of metrics) {
    lintName(m, out);
    lintLabels(m, labels, out);
    const exposed =
      m.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => m.name + s) : [m.name];
    for (const name of exposed) {
      if (seen.has(name))
        out.push({ metric: m.name, rule: 'unique', message: `${name} exposed twice` });
      seen.add(name);
    }
  }
  return out;
}

const RECORD_KEY = new RegExp(METRIC_NAME_PATTERN);

/**
 * Rules for the step-metric table: record keys valid on the wire and unique, templates that name
 * their label, per-value keys for exactly the label's values, series only over closed labels.
 */
export function lintStepTable(table: StepMetricTable): Violation[] {
  const out: Violation[] = [];
  const owner = new Map<string, string>();
  for (const [id, row] of Object.entries(table)) {
    const add = (rule: string, message: string) => out.push({ metric: id, rule, message });
    const placeholder = row.label === undefined ? undefined : `{${row.label}}`;
    if (typeof row.key === 'string') {
      const holes = row.key.match(/\{[^}]*\}/g) ?? [];
      if (placeholder === undefined && holes.length > 0) {
        add('record-key', `${row.key}: a template needs a label`);
      }
      if (placeholder !== undefined && (holes.length !== 1 || holes[0] !== placeholder)) {
        add('record-key', `${row.key}: a labelled key holds ${placeholder} exactly once`);
      }
    } else {
      const closed = row.label === undefined ? undefined : labelValues({ ...row, key: '' });
      const given = Object.keys(row.key).sort().join(',');
      if (row.label === undefined) add('record-key', 'per-value keys need a label');
      else if (closed !== undefined && [...closed].sort().join(',') !== given) {
        add('record-key', `keys for {${given}}, but ${row.label} takes {${closed.join(',')}}`);
      }
    }
    for (const { key } of recordBindings(row)) {
      if (!RECORD_KEY.test(key)) add('record-key', `${key} is not a valid record key`);
      const other = owner.get(key);
      if (other !== undefined) add('record-key', `${key} is also the key of ${other}`);
      owner.set(key, id);
    }
    if (row.series && row.label !== undefined && labelValues(row) === undefined) {
      add('series-label', `a series needs a closed label (${row.label} is open)`);
    }
    if (row.kinds.length === 0) add('kinds', 'at least one run kind records each key');
    if (row.help.trim() === '' || row.help.includes('\n'))
      add('help', 'help is one non-empty line');
  }
  return out;
}
