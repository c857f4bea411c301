// Run lifecycle: queued -> running -> succeeded | failed | cancelled, plus retrying
// (a running run whose worker was lost or released it; it resumes from its last checkpoint).
import { Type, type Static } from '@sinclair/typebox';

export const RUN_STATES = [
  'queued',
  'running',
  'retrying',
  'succeeded',
  'failed',
  'cancelled',
] as const;
export type RunState = (typeof RUN_STATES)[number];
export const RunStateSchema = Type.Union(
  RUN_STATES.map((s) => Type.Literal(s)),
  { description: 'Run state.' },
);

export const TERMINAL_STATES: ReadonlySet<RunState> = new Set(['succeeded', 'failed', 'cancelled']);

/** Allowed transitions; anything else is rejected by the store. */
export const RUN_TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = {
  queued: ['running', 'cancelled', 'failed'],
  running: ['succeeded', 'failed', 'cancelled', 'retrying'],
  retrying: ['running', 'cancelled', 'failed'],
  succeeded: [],
  failed: [],
  cancelled: [],
};

export function isTerminal(state: RunState): boolean {
  return TERMINAL_STATES.has(state);
}

export function canTransition(from: RunState, to: RunState): boolean {
  return RUN_TRANSITIONS[from].includes(to);
}

/** One stored transition (`from` is null for the initial `queued`). */
export const Transition = Type.Object(
  {
    from: Type.Union([RunStateSchema, Type.Null()]),
    to: RunStateSchema,
    at: Type.String({ format: 'date-time' }),
    reason: Type.String(),
    workerId: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type Transition = Static<typeof Transition>;
