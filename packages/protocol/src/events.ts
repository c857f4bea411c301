// Typed `noun:verb` events: stored in a per-run Redis stream and served over SSE.
import { Type, type Static } from '@sinclair/typebox';
import { RunStateSchema } from './run-state.ts';
import { WireStepMetrics } from './step-record.ts';

export const RunStateEvent = Type.Object(
  {
    type: Type.Literal('run:state'),
    runId: Type.String(),
    from: Type.Union([RunStateSchema, Type.Null()]),
    to: RunStateSchema,
    reason: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const StepCommittedEvent = Type.Object(
  {
    type: Type.Literal('step:committed'),
    runId: Type.String(),
    step: Type.Integer({ minimum: 0 }),
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

export const RunEvent = Type.Union([
  RunStateEvent,
  StepCommittedEvent,
  CheckpointSavedEvent,
  RunNoticeEvent,
]);
export type RunStateEvent = Static<typeof RunStateEvent>;
export type StepCommittedEvent = Static<typeof StepCommittedEvent>;
export type CheckpointSavedEvent = Static<typeof CheckpointSavedEvent>;
export type RunNoticeEvent = Static<typeof RunNoticeEvent>;
export type RunEvent = Static<typeof RunEvent>;
export type RunEventType = RunEvent['type'];

/** Event type -> payload, for typed subscribers (`on<K extends keyof RunEventMap>`). */
export interface RunEventMap {
  'run:state': RunStateEvent;
  'step:committed': StepCommittedEvent;
  'checkpoint:saved': CheckpointSavedEvent;
  'run:notice': RunNoticeEvent;
}

/** A stored event with its stream id (usable as SSE `id:` / `Last-Event-ID`). */
export interface StoredRunEvent {
  id: string;
  event: RunEvent;
}
