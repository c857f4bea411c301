// The per-step record a worker commits (idempotent by step number).
import { Type, type Static } from '@sinclair/typebox';
import { METRIC_NAME_PATTERN } from './names.ts';

/** Metric values are numbers; `null` marks a value the backend did not report (never made up). */
export const StepMetrics = Type.Record(
  Type.String({ pattern: METRIC_NAME_PATTERN }),
  Type.Union([Type.Number(), Type.Null()]),
  { additionalProperties: false, maxProperties: 512 },
);
export type StepMetrics = Static<typeof StepMetrics>;

export const StepRecord = Type.Object(
  {
    step: Type.Integer({
      minimum: 0,
      description: 'Step number (0-based or 1-based; unique per run).',
    }),
    metrics: StepMetrics,
    at: Type.String({ format: 'date-time', description: 'When the step was committed.' }),
  },
  { additionalProperties: false },
);
export type StepRecord = Static<typeof StepRecord>;
