export {
  METRICS,
  allExposedSeriesNames,
  buildCatalogue,
  exposedSeriesNames,
  getMetricDefinition,
  stepSeriesDefinitions,
  type MetricDefinition,
  type MetricName,
  type MetricScope,
  type MetricType,
  type MetricUnit,
} from './catalogue.ts';
export { renderMetricsDoc } from './doc.ts';
export {
  EVAL_CELL_BOUNDS,
  EVAL_CELL_LABEL_KEYS,
  EVAL_CELL_SERIES,
  type EvalCellSeries,
  type EvalCellSeriesName,
} from './eval-series.ts';
export { eventLogFields, logEvents } from './event-log.ts';
export {
  createEventBus,
  noopEmitter,
  type EventBus,
  type EventBusOptions,
  type StepCommitted,
  type TelemetryEmitter,
  type TelemetryEventName,
  type TelemetryEvents,
} from './events.ts';
export * from './labels.ts';
export {
  DEFAULT_REDACT_PATHS,
  LOG_LEVELS,
  createLogger,
  noopLogger,
  type CreateLoggerOptions,
  type LogFn,
  type LogLevel,
  type Logger,
} from './logger.ts';
export { createMetrics, type CreateMetricsOptions, type MetricsSink } from './metrics.ts';
export { lintCatalogue, lintStepTable, type Violation } from './naming.ts';
export { metricsEmittedBy, registerCatalogue } from './registry.ts';
export { StepRecordSchema, stepRecordError, stepRecordSchema } from './step-record-schema.ts';
export {
  STEP_METRICS,
  STEP_SECTIONS,
  type StepMetricDefinition,
  type StepMetricTable,
  type StepSection,
  type StepSeries,
} from './step-metrics.ts';
export type { WorkerIdentity } from './worker-mapping.ts';
/** Re-exported so apps create their own registry without depending on prom-client directly. */
export { Registry } from 'prom-client';
