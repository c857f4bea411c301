// The kinds and units of Anneal's Prometheus series (shared by the catalogue and the step table).
export type MetricType = 'counter' | 'gauge' | 'histogram';
/** `none` = dimensionless (rewards, KL, norms, counts of things). */
export type MetricUnit = 'seconds' | 'bytes' | 'ratio' | 'tokens' | 'none';
