// Typed `noun:verb` events: stored in a per-run Redis stream and served over SSE.
import { Type, type Static } from '@sinclair/typebox';
import { GuardrailActionSchema, GuardrailRule } from './run-spec/guardrails.ts';
import { PauseSourceSchema, RunStateSchema } from './run-state.ts';
import { DeprecatedStepGeneration, StepRollbacks, WireStepMetrics } from './step-record.ts';

export const RunStateEvent = Type.Object(
  {
    type: Type.Literal('run:state'),
    runId: Type.String(),
    from: Type.Union([RunStateSchema, Type.Null()]),
    to: RunStateSchema,
    reason: Type.String(),
    at: Type.String({ format: 'date-time' }),
    by: Type.Optional(PauseSourceSchema),
    /** Who asked for it (a cancel): the token's principal name (Transition.principal). */
    principal: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const StepCommittedEvent = Type.Object(
  {
    type: Type.Literal('step:committed'),
    runId: Type.String(),
    step: Type.Integer({ minimum: 0 }),
    rollbacks: Type.Optional(StepRollbacks),
    generation: Type.Optional(DeprecatedStepGeneration),
    metrics: WireStepMetrics,
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const CheckpointSavedEvent = Type.Object(
  {
    type: Type.Literal('checkpoint:saved'),
    runId: Type.String(),
    step: Type.Integer({ minimum: 0 }),
    path: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** Something about how a run executes that its owner should know but that does not stop it,
 * e.g. a requested setting the trainer backend does not apply (`code` is stable, `message`
 * says what happens instead). */
export const RunNoticeEvent = Type.Object(
  {
    type: Type.Literal('run:notice'),
    runId: Type.String(),
    code: Type.String({ pattern: '^[a-z][a-z0-9_]*$' }),
    message: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

/** A metric value a guardrail saw: JSON has no NaN or Infinity, so those are strings. */
export const GuardrailValue = Type.Union([
  Type.Number(),
  Type.Literal('NaN'),
  Type.Literal('Infinity'),
  Type.Literal('-Infinity'),
  Type.Null(),
]);
export type GuardrailValue = Static<typeof GuardrailValue>;

/** One firing of a guardrail rule (docs/guardrails.md "Auditing a firing"). */
export const GuardrailFiring = Type.Object(
  {
    step: Type.Integer({ minimum: 1, description: 'The step at which the rule fired.' }),
    rule: Type.Object(
      {
        ...GuardrailRule.properties,
        name: Type.String(),
        origin: Type.Union([Type.Literal('spec'), Type.Literal('operator')]),
      },
      { additionalProperties: false },
    ),
    values: Type.Array(
      Type.Object(
        { step: Type.Integer({ minimum: 1 }), value: GuardrailValue },
        { additionalProperties: false },
      ),
      { description: 'The metric at each step of the streak that fired the rule (forSteps).' },
    ),
    median: Type.Optional(
      Type.Number({ description: 'spike: the running median the last value was compared with.' }),
    ),
    action: GuardrailActionSchema,
    restored: Type.Optional(
      Type.Object(
        {
          step: Type.Integer({ minimum: 0 }),
          path: Type.Union([Type.String(), Type.Null()], {
            description: "null: the run's starting weights (no clean checkpoint yet).",
          }),
        },
        { additionalProperties: false, description: 'rollback: the checkpoint restored.' },
      ),
    ),
    rolledBackSteps: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1 }), {
        description: 'rollback: committed steps now kept as rolled back (GET …/metrics).',
      }),
    ),
    rollbacks: Type.Optional(
      Type.Integer({
        minimum: 1,
        description: "rollback: the run's n-th rollback (its rollbacks after it).",
      }),
    ),
    rollback: Type.Optional(
      Type.Integer({ minimum: 1, deprecated: true, description: 'Deprecated: rollbacks.' }),
    ),
    learningRateScale: Type.Optional(
      Type.Number({ description: 'rollback: learning-rate factor in force from now on.' }),
    ),
    reason: Type.String({ description: 'One line: rule, values and what was done.' }),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type GuardrailFiring = Static<typeof GuardrailFiring>;

export const GuardrailFiredEvent = Type.Object(
  { type: Type.Literal('guardrail:fired'), runId: Type.String(), ...GuardrailFiring.properties },
  { additionalProperties: false },
);

export const RunEvent = Type.Union([
  RunStateEvent,
  StepCommittedEvent,
  CheckpointSavedEvent,
  RunNoticeEvent,
  GuardrailFiredEvent,
]);
export type RunStateEvent = Static<typeof RunStateEvent>;
export type StepCommittedEvent = Static<typeof StepCommittedEvent>;
export type CheckpointSavedEvent = Static<typeof CheckpointSavedEvent>;
export type RunNoticeEvent = Static<typeof RunNoticeEvent>;
export type GuardrailFiredEvent = Static<typeof GuardrailFiredEvent>;
export type RunEvent = Static<typeof RunEvent>;
export type RunEventType = RunEvent['type'];

/** Event type -> payload, for typed subscribers (`on<K extends keyof RunEventMap>`). */
export interface RunEventMap {
  'run:state': RunStateEvent;
  'step:committed': StepCommittedEvent;
  'checkpoint:saved': CheckpointSavedEvent;
  'run:notice': RunNoticeEvent;
  'guardrail:fired': GuardrailFiredEvent;
}

/** A stored event with its stream id (usable as SSE `id:` / `Last-Event-ID`). */
export interface StoredRunEvent {
  id: string;
  event: RunEvent;
}
