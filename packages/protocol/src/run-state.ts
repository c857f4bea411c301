// Run lifecycle: queued -> running -> succeeded | failed | cancelled, plus retrying
// (a running run whose worker was lost or released it; it resumes from its last checkpoint)
// and paused (stopped on request at a step boundary after a checkpoint; it holds no worker slot
// until a resume queues it again, and it continues from that checkpoint).
import { Type, type Static } from '@sinclair/typebox';
import { RUN_STATES, type RunState } from './run-states.ts';

export const RunStateSchema = Type.Union(
  RUN_STATES.map((s) => Type.Literal(s)),
  { description: 'Run state.' },
);

/** Allowed transitions; anything else is rejected by the store. */
export const RUN_TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = {
  queued: ['running', 'cancelled', 'failed', 'paused'],
  running: ['succeeded', 'failed', 'cancelled', 'retrying', 'paused'],
  retrying: ['running', 'cancelled', 'failed', 'paused'],
  // Resume queues the run again; a paused run has no job, so only a cancel ends it.
  paused: ['queued', 'cancelled'],
  succeeded: [],
  failed: [],
  cancelled: [],
};

export function canTransition(from: RunState, to: RunState): boolean {
  return RUN_TRANSITIONS[from].includes(to);
}

/** What paused a run: a user's request (POST /v1/runs/{id}/pause), a guardrail rule of the
 * run's spec, or a budget cap. */
export const PAUSE_SOURCES = ['user', 'guardrail', 'budget'] as const;
export type PauseSource = (typeof PAUSE_SOURCES)[number];
export const PauseSourceSchema = Type.Union(
  PAUSE_SOURCES.map((s) => Type.Literal(s)),
  { description: 'What paused the run: a user, a guardrail rule, or a budget cap.' },
);

/** A pause request: pending while the run is still `running`, the cause while it is `paused`. */
export const PauseRequest = Type.Object(
  {
    by: PauseSourceSchema,
    reason: Type.String({ maxLength: 1000 }),
    requestedAt: Type.String({ format: 'date-time' }),
  },
  {
    additionalProperties: false,
    description:
      'A pause asked for: pending while the run is `running` (it pauses at its next step ' +
      'boundary), the cause while it is `paused`; a resume clears it.',
  },
);
export type PauseRequest = Static<typeof PauseRequest>;

/** One stored transition (`from` is null for the initial `queued`). */
export const Transition = Type.Object(
  {
    from: Type.Union([RunStateSchema, Type.Null()]),
    to: RunStateSchema,
    at: Type.String({ format: 'date-time' }),
    reason: Type.String(),
    workerId: Type.Optional(Type.String()),
    by: Type.Optional(PauseSourceSchema),
    principal: Type.Optional(
      Type.String({
        description:
          'Who asked for it (a cancel): the principal name of the token, recorded by the ' +
          "control plane. `reason` is the caller's own text and attributes nothing.",
      }),
    ),
  },
  { additionalProperties: false },
);
export type Transition = Static<typeof Transition>;
