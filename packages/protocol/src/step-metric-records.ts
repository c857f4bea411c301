// What is derived from the step-metric key table (step-metric-keys.ts): the typed record an
// executor builds, the concrete keys of a row and of a run kind, and the issues the run spec's
// and the operator config's checks report for a metric name.
import type { Issue } from './issue.ts';
import { RUN_KINDS, type RunKind } from './run-spec/common.ts';
import { STEP_LABEL_VALUES, STEP_METRIC_KEYS, type StepKeyDefinition } from './step-metric-keys.ts';

// ── derived: record keys ──────────────────────────────────────────────────────────────────

type LabelValuesOf<L> = L extends 'group'
  ? `${number}`
  : L extends keyof typeof STEP_LABEL_VALUES
    ? (typeof STEP_LABEL_VALUES)[L][number]
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

type Table = typeof STEP_METRIC_KEYS;

/** Ids of the step-metric rows (the series half in @anneal/telemetry uses the same ids). */
export type StepMetricId = keyof Table;

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
  for (const [id, row] of Object.entries(STEP_METRIC_KEYS) as [string, StepKeyDefinition][]) {
    if (row.label === undefined && typeof row.key === 'string') out[id] = row.key;
  }
  return out as { readonly [Id in SingleKeyIds]: Table[Id]['key'] };
}

/** Closed values of a row's label; undefined for a row without one or with an open one. */
export function labelValues(row: StepKeyDefinition): readonly string[] | undefined {
  if (row.label === undefined) return undefined;
  if (typeof row.key !== 'string') return Object.keys(row.key);
  if (row.label === 'group') return undefined;
  return STEP_LABEL_VALUES[row.label];
}

/** The record key of `row` for label value `value` (rows with one key ignore it). */
export function recordKey<Row extends StepKeyDefinition, V extends RowLabelValue<Row> & string>(
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
export function recordBindings(row: StepKeyDefinition): RecordBinding[] {
  if (row.label === undefined) return [{ key: row.key as string }];
  const name = row.label;
  return (labelValues(row) ?? []).map((value) => ({
    key: recordKey(row, value as never),
    label: { name, value },
  }));
}

/** How a row's keys read in docs: `reward/{component}`, or `train_inference_kl/k1 (k1), …`. */
export function keyPattern(row: StepKeyDefinition): string {
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

const KEYS_BY_KIND: ReadonlyMap<RunKind, ReadonlySet<string>> = new Map(
  RUN_KINDS.map((kind) => [
    kind,
    new Set(
      (Object.values(STEP_METRIC_KEYS) as StepKeyDefinition[])
        .filter((row) => row.kinds.includes(kind))
        .flatMap((row) => recordBindings(row).map((b) => b.key)),
    ),
  ]),
);

/** Every concrete record key runs of `kind` record: the metrics a guardrail rule or `keepBest`
 * may name (rows with an open label, e.g. `tool_baseline/g{group}`, have none). */
export function kindRecordKeys(kind: RunKind): ReadonlySet<string> {
  return KEYS_BY_KIND.get(kind) ?? new Set();
}

/** The run kinds whose steps record `key` (empty: no kind does — a misspelt metric). */
export function kindsRecording(key: string): RunKind[] {
  return RUN_KINDS.filter((kind) => KEYS_BY_KIND.get(kind)?.has(key));
}

/**
 * The issue for a metric named at `path` that runs of `kind` do not record, listing the ones
 * they do; undefined when `kind` records it.
 */
export function stepMetricIssue(kind: RunKind, metric: string, path: string): Issue | undefined {
  const known = kindRecordKeys(kind);
  if (known.has(metric)) return undefined;
  const list = [...known].sort().join(', ');
  return { path, message: `'${metric}' is not a step metric of ${kind} runs (known: ${list})` };
}

/**
 * The issue for an operator default (a guardrail rule or `keepBest`) naming a metric at `path`
 * that no run kind records: it would be dropped silently from every run. A metric some kind
 * records applies to those kinds only.
 */
export function defaultMetricIssue(metric: string, path: string): Issue | undefined {
  if (kindsRecording(metric).length > 0) return undefined;
  return { path, message: `'${metric}' is not a step metric any run kind records` };
}
