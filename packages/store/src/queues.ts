// BullMQ helpers: one queue per pool (`pool-<name>`), job id = run id, user priority mapped to
// BullMQ priority. Queue keys live under `<prefix>:bull`, inside the same hash tag as the store.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { JOB_CATALOGUE, bullPriority, poolQueueName } from '@anneal/protocol';
import type { RunJobPayload } from '@anneal/protocol';
import { keys } from './context.ts';

/** The BullMQ `prefix` option for queues and workers of this store prefix. */
export function bullPrefix(prefix: string): string {
  return keys(prefix).bullPrefix();
}

/** Lazily created queues, one per pool, sharing one connection. */
export interface PoolQueues {
  get(pool: string): Queue;
  close(): Promise<void>;
}

/** `onError` receives the queues' connection errors (BullMQ prints them to stderr when a queue
 * has no error listener); the caller usually logs the connection's own errors already. */
export function createPoolQueues(
  connection: Redis,
  prefix: string,
  onError?: (error: Error) => void,
): PoolQueues {
  const queues = new Map<string, Queue>();
  return {
    get(pool) {
      let queue = queues.get(pool);
      if (!queue) {
        queue = new Queue(poolQueueName(pool), { connection, prefix: bullPrefix(prefix) });
        if (onError) queue.on('error', onError);
        queues.set(pool, queue);
      }
      return queue;
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => q.close()));
      queues.clear();
    },
  };
}

/** Adds the run's job; adding a run that already has a job is a no-op (job id = run id). */
export async function enqueueRun(
  queue: Queue,
  run: { id: string; priority: number },
): Promise<void> {
  const spec = JOB_CATALOGUE.run;
  const payload: RunJobPayload = { runId: run.id };
  await queue.add(spec.name, payload, {
    jobId: run.id,
    priority: bullPriority(run.priority),
    attempts: spec.attempts,
    backoff: spec.backoff,
    removeOnComplete: { age: 24 * 60 * 60 },
    removeOnFail: { age: 7 * 24 * 60 * 60 },
  });
}

/** Removes a waiting/delayed job. False if a worker holds it (active) or it does not exist. */
export async function removeQueuedJob(queue: Queue, runId: string): Promise<boolean> {
  const job = await queue.getJob(runId);
  if (!job) return false;
  return (await queue.remove(runId)) === 1;
}

export interface QueueCounts {
  waiting: number;
  prioritized: number;
  delayed: number;
  active: number;
  paused: number;
  completed: number;
  failed: number;
}

export async function queueCounts(queue: Queue): Promise<QueueCounts> {
  const counts = await queue.getJobCounts(
    'waiting',
    'prioritized',
    'delayed',
    'active',
    'completed',
    'failed',
  );
  // BullMQ 6 has no separate paused list: jobs of a paused queue stay in `wait`.
  const paused = await queue.isPaused();
  return {
    waiting: paused ? 0 : (counts.waiting ?? 0),
    prioritized: counts.prioritized ?? 0,
    delayed: counts.delayed ?? 0,
    active: counts.active ?? 0,
    paused: paused ? (counts.waiting ?? 0) : 0,
    completed: counts.completed ?? 0,
    failed: counts.failed ?? 0,
  };
}
