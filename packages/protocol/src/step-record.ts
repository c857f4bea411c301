// The per-step record a worker commits (idempotent by step number).
import { Type, type Static } from '@sinclair/typebox';
import { METRIC_NAME_PATTERN } from './names.ts';

/**
 * Metric values are numbers; `null` marks a value the backend did not report (never made up).
 * This is the open wire envelope: any valid name, so records from older or newer workers and
 * custom metrics still parse. Which keys exist, their units and their series are one table in
 * @anneal/telemetry (step-metrics.ts), which derives the typed record executors build
 * (StepRecordMetrics) and a stricter schema for those keys (telemetry depends on this package, not the reverse).
 */
export const WireStepMetrics = Type.Record(
  Type.String({ pattern: METRIC_NAME_PATTERN }),
  Type.Union([Type.Number(), Type.Null()]),
  { additionalProperties: false, maxProperties: 512 },
);
export type WireStepMetrics = Static<typeof WireStepMetrics>;

export const StepRecord = Type.Object(
  {
    step: Type.Integer({
      minimum: 0,
      description: 'Step number (0-based or 1-based; unique per run).',
    }),
    metrics: WireStepMetrics,
    at: Type.String({ format: 'date-time', description: 'When the step was committed.' }),
  },
  { additionalProperties: false },
);
export type StepRecord = Static<typeof StepRecord>;
