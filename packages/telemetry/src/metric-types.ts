// The kinds, units and definition shape of Anneal's Prometheus series (shared by the catalogue,
// the step table and the eval cell series).
import type { AppName, LabelName } from './labels.ts';

export type MetricType = 'counter' | 'gauge' | 'histogram';
/** `none` = dimensionless (rewards, KL, norms, counts of things). */
export type MetricUnit = 'seconds' | 'bytes' | 'ratio' | 'tokens' | 'none';
/** run: per-run training series (label run_id); worker: per worker process; control-plane; process: both apps. */
export type MetricScope = 'run' | 'worker' | 'control-plane' | 'process';

export interface MetricDefinition {
  name: string;
  type: MetricType;
  unit: MetricUnit;
  scope: MetricScope;
  labels: readonly LabelName[];
  /** Closed value sets for labels whose values depend on the metric (e.g. `state`). */
  labelValues?: Partial<Record<LabelName, readonly string[]>>;
  help: string;
  emittedBy: readonly AppName[];
  /** Histogram upper bounds, strictly increasing, in the metric's unit. */
  buckets?: readonly number[];
  /** Step-record key(s) the series is set from (derived from STEP_METRICS; docs only). */
  recordKey?: string;
}
