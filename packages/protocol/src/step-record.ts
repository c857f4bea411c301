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

/** Rollbacks the run had taken when a step was committed (docs/guardrails.md "Rolled-back
 * steps"): a step re-run after the n-th rollback is committed with rollbacks n. */
export const StepRollbacks = Type.Integer({
  minimum: 1,
  description: 'Rollbacks before this record was committed; absent: none.',
});

const StepAttempt = Type.Integer({
  minimum: 1,
  description:
    'The attempt that committed it: whose rollouts the ledger keeps for the step (docs/reliability.md "The rollout ledger across killed attempts").',
});

/** `rollbacks` under its old name (docs/recipe.md "Renamed fields"): written and served beside
 * it until DEPRECATED_NAMES_UNTIL (renamed-fields.ts); an older worker wrote only this. */
export const DeprecatedStepGeneration = Type.Integer({
  minimum: 1,
  deprecated: true,
  description: 'Deprecated: the same as rollbacks.',
});

export const StepRecord = Type.Object(
  {
    step: Type.Integer({
      minimum: 0,
      description: 'Step number (0-based or 1-based; unique per run).',
    }),
    rollbacks: Type.Optional(StepRollbacks),
    generation: Type.Optional(DeprecatedStepGeneration),
    metrics: WireStepMetrics,
    at: Type.String({ format: 'date-time', description: 'When the step was committed.' }),
    attempt: Type.Optional(StepAttempt),
  },
  { additionalProperties: false },
);
export type StepRecord = Static<typeof StepRecord>;

/** A step a guardrail rollback took back: kept, never overwritten by the step's re-run. */
export const RolledBackStepRecord = Type.Object(
  {
    step: Type.Integer({ minimum: 1 }),
    rollbacks: Type.Optional(StepRollbacks),
    generation: Type.Optional(DeprecatedStepGeneration),
    metrics: WireStepMetrics,
    at: Type.String({ format: 'date-time', description: 'When the step ran.' }),
    attempt: Type.Optional(StepAttempt),
    rolledBack: Type.Object(
      {
        rollbacks: Type.Integer({
          minimum: 1,
          description: "The run's n-th rollback took it back (its rollbacks after it).",
        }),
        rollback: Type.Optional(
          Type.Integer({
            minimum: 1,
            deprecated: true,
            description: 'Deprecated: the same as rollbacks.',
          }),
        ),
        at: Type.String({ format: 'date-time' }),
        fired: Type.Boolean({
          description:
            'The step at which the rule fired: never committed (non-finite values are null here).',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type RolledBackStepRecord = Static<typeof RolledBackStepRecord>;
