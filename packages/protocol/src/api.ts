// Response shapes of the REST API v1 (the same schemas feed OpenAPI at /docs).
import { Type, type Static } from '@sinclair/typebox';
import type { RunSpec } from './run-spec/index.ts';
import { RunKindSchema } from './run-spec/kind.ts';
import { PauseRequest, RunStateSchema, Transition } from './run-state.ts';
import { RolledBackStepRecord, StepRecord } from './step-record.ts';
import { WorkerRecord } from './control.ts';
import { GuardrailFiring } from './events.ts';
import { RunParent } from './checkpoints.ts';
import { AdapterDemand } from './adapter-capacity.ts';

export const CheckpointPointer = Type.Object(
  {
    step: Type.Integer({ minimum: 0 }),
    path: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, description: 'Latest checkpoint; a retried run resumes from it.' },
);
export type CheckpointPointer = Static<typeof CheckpointPointer>;

/** Most recent firings a run record keeps (all of them are on the run's event stream). */
export const GUARDRAIL_FIRINGS_KEPT = 100;

/** What the guardrails did to a run (docs/guardrails.md "Auditing a firing"). */
export const GuardrailState = Type.Object(
  {
    rollbacks: Type.Integer({ minimum: 0, description: 'Rollbacks taken so far.' }),
    learningRateScale: Type.Number({
      description: 'Factor on the spec learning rate in force (product over the rollbacks).',
    }),
    safeCheckpoint: Type.Optional(
      Type.Object(
        { step: Type.Integer({ minimum: 0 }), path: Type.Union([Type.String(), Type.Null()]) },
        {
          additionalProperties: false,
          description:
            'The last checkpoint at which no rule held: what a rollback would restore (null path: the starting weights).',
        },
      ),
    ),
    firings: Type.Array(GuardrailFiring, {
      description: `The latest ${GUARDRAIL_FIRINGS_KEPT} firings, oldest first.`,
    }),
  },
  { additionalProperties: false },
);
export type GuardrailState = Static<typeof GuardrailState>;

/** A run as the API returns it. `spec` is the resolved spec (defaults applied). */
/** A run's share of one inference endpoint it shares by weight (docs/operations.md "Fair share
 * of an endpoint"), as of its last request there. */
export const FleetShare = Type.Object(
  {
    weight: Type.Number({ description: "The run's share weight (its tenant's weight)." }),
    requests: Type.Integer({ minimum: 0, description: 'Rollout requests served.' }),
    tokens: Type.Integer({ minimum: 0, description: 'Tokens generated for the run.' }),
    tokenShare: Type.Number({
      minimum: 0,
      maximum: 1,
      description: "The run's tokens over every run's on the endpoint since its first request.",
    }),
    waitedSeconds: Type.Number({
      minimum: 0,
      description: 'Time its requests waited for its share, summed.',
    }),
  },
  { additionalProperties: false },
);
export type FleetShare = Static<typeof FleetShare>;
export const FleetShares = Type.Record(Type.String(), FleetShare, {
  description:
    "By inference endpoint: the run's share of the endpoints whose capacity runs share by weight (maxNumSeqs declared); absent before its first request there.",
});

export const RunResource = Type.Object({
  id: Type.String(),
  tenant: Type.String(),
  kind: RunKindSchema,
  state: RunStateSchema,
  pool: Type.String(),
  priority: Type.Integer(),
  labels: Type.Record(Type.String(), Type.String()),
  name: Type.Optional(Type.String()),
  // On the wire an open object (the OpenAPI document stays small, the body is sent as stored);
  // in TypeScript the resolved spec it is: validated at submission, stored as resolved.
  spec: Type.Unsafe<RunSpec & { pool: string }>(Type.Record(Type.String(), Type.Unknown())),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  endedAt: Type.Optional(Type.String({ format: 'date-time' })),
  workerId: Type.Optional(Type.String()),
  attempt: Type.Integer({ minimum: 0, description: 'Times the run has been started.' }),
  waitingReason: Type.Optional(
    Type.String({ description: 'Why a queued/retrying run is not running yet.' }),
  ),
  adapterDemand: Type.Optional(
    Type.Array(AdapterDemand, {
      description:
        'Adapter slots the run holds on each endpoint while it runs, computed at submission (docs/operations.md "Adapter capacity"); absent when it uses no endpoint with slots.',
    }),
  ),
  fleetShare: Type.Optional(FleetShares),
  cancelRequested: Type.Boolean(),
  pause: Type.Optional(PauseRequest),
  error: Type.Optional(Type.String()),
  lastStep: Type.Optional(Type.Integer()),
  checkpoint: Type.Optional(CheckpointPointer),
  parent: Type.Optional(RunParent),
  transitions: Type.Optional(Type.Array(Transition)),
  guardrails: Type.Optional(GuardrailState),
});
export type RunResource = Static<typeof RunResource>;

export const RunList = Type.Object({
  runs: Type.Array(RunResource),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` to get the next page; null at the end.',
  }),
});
export type RunList = Static<typeof RunList>;

export const StepHistory = Type.Object({
  runId: Type.String(),
  steps: Type.Array(StepRecord),
  rolledBack: Type.Optional(
    Type.Array(RolledBackStepRecord, {
      description:
        'Steps guardrail rollbacks took back, by step then rollback (docs/guardrails.md "Rolled-back steps"); present when there are any.',
    }),
  ),
});
export type StepHistory = Static<typeof StepHistory>;

export const QueueCounts = Type.Object({
  waiting: Type.Integer(),
  prioritized: Type.Integer(),
  delayed: Type.Integer(),
  active: Type.Integer(),
  paused: Type.Integer(),
  completed: Type.Integer(),
  failed: Type.Integer(),
});

export const PoolStatus = Type.Object({
  name: Type.String(),
  slotsPerWorker: Type.Integer({ description: 'Configured run slots per worker.' }),
  workers: Type.Object({ online: Type.Integer(), busy: Type.Integer(), draining: Type.Integer() }),
  slots: Type.Object({ total: Type.Integer(), busy: Type.Integer(), free: Type.Integer() }),
  queue: QueueCounts,
  oldestWaitingAgeSeconds: Type.Union([Type.Number(), Type.Null()]),
});
export type PoolStatus = Static<typeof PoolStatus>;

export const PoolList = Type.Object({ pools: Type.Array(PoolStatus) });
export const WorkerList = Type.Object({ workers: Type.Array(WorkerRecord) });
