// The baseline: a plain BullMQ Worker with an empty processor, on a connection with the same
// options as the Anneal worker's queue connection, that records each job like the instant
// executor records each run.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { type Execution, wallClockMs } from './executions.ts';

export interface BaselineWorker {
  close(): Promise<void>;
}

export async function startBaselineWorker(options: {
  redisUrl: string;
  prefix: string;
  queue: string;
  concurrency: number;
  workerId: string;
  log: Execution[];
}): Promise<BaselineWorker> {
  const { redisUrl, prefix, queue, concurrency, workerId, log } = options;
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const worker = new Worker(
    queue,
    async (job) => {
      const startMs = wallClockMs();
      log.push({ runId: job.id ?? '?', workerId, startMs, endMs: wallClockMs() });
    },
    { connection, prefix, concurrency, name: workerId },
  );
  worker.on('error', (error) => console.error(`baseline worker ${workerId}: ${String(error)}`));
  await worker.waitUntilReady();
  return {
    async close() {
      await worker.close();
      await connection.quit();
    },
  };
}
