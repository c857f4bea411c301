// The job catalogue: every BullMQ job Anneal enqueues, with its queue, payload schema and policy.
import { Type, type Static } from '@sinclair/typebox';
import { RunId } from './names.ts';

export const RunJobPayload = Type.Object({ runId: RunId }, { additionalProperties: false });
export type RunJobPayload = Static<typeof RunJobPayload>;

/** BullMQ queue name of a pool (BullMQ forbids ':' in names; pool names never contain one). */
export function poolQueueName(pool: string): string {
  return `pool-${pool}`;
}

/** User priority 0..100 (higher first) -> BullMQ priority 1..101 (lower first; FIFO within). */
export function bullPriority(priority: number): number {
  return 101 - Math.min(100, Math.max(0, Math.round(priority)));
}

export const JOB_CATALOGUE = {
  /** One run = one job; job id = run id; the worker executes the run's kind. */
  run: {
    name: 'run',
    payload: RunJobPayload,
    queueName: poolQueueName,
    /** Attempts before the run is failed; each retry resumes from the last checkpoint. */
    attempts: 3,
    backoff: { type: 'exponential' as const, delay: 5_000 },
    /** A run may take hours: the worker renews its lock; stalled jobs are retried (worker lost). */
    lockDurationMs: 60_000,
    maxStalledCount: 3,
  },
} as const;

export type JobName = keyof typeof JOB_CATALOGUE;
