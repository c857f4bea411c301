// Control-plane <-> worker messages (Redis pub/sub) and the worker registry record.
import { Type, type Static } from '@sinclair/typebox';
import { ResourceName, RunId, WorkerId } from './names.ts';

/** Stop `runId` at the next step boundary after a final checkpoint. */
export const CancelMessage = Type.Object(
  { type: Type.Literal('cancel'), runId: RunId, reason: Type.String() },
  { additionalProperties: false },
);

/** Pause `runId` at the next step boundary after a checkpoint (the run's `pause` field says
 * why; workers re-check it at step boundaries, so a missed message is not lost). */
export const PauseMessage = Type.Object(
  { type: Type.Literal('pause'), runId: RunId, reason: Type.String() },
  { additionalProperties: false },
);

/** Take no new runs; with checkpointAndRelease, checkpoint current runs and requeue them. */
export const DrainMessage = Type.Object(
  { type: Type.Literal('drain'), workerId: WorkerId, checkpointAndRelease: Type.Boolean() },
  { additionalProperties: false },
);

export const ControlMessage = Type.Union([CancelMessage, PauseMessage, DrainMessage]);
export type CancelMessage = Static<typeof CancelMessage>;
export type PauseMessage = Static<typeof PauseMessage>;
export type DrainMessage = Static<typeof DrainMessage>;
export type ControlMessage = Static<typeof ControlMessage>;

/** What a worker publishes with each heartbeat. */
export const WorkerRecord = Type.Object(
  {
    id: WorkerId,
    pool: ResourceName,
    slots: Type.Integer({ minimum: 1, description: 'Runs this worker can hold at once.' }),
    busy: Type.Integer({ minimum: 0, description: 'Slots in use.' }),
    runs: Type.Array(Type.String(), { description: 'Run ids currently held.' }),
    draining: Type.Boolean(),
    checkpointAndRelease: Type.Boolean(),
    startedAt: Type.String({ format: 'date-time' }),
    lastHeartbeat: Type.String({ format: 'date-time' }),
    host: Type.Optional(Type.String()),
    version: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type WorkerRecord = Static<typeof WorkerRecord>;

/** Seconds after the last heartbeat when a worker counts as lost. */
export const DEFAULT_WORKER_TTL_SECONDS = 30;
