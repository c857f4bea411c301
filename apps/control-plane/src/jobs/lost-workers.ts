// The control plane notices dead workers: every `lostWorkerSweepMs` it moves the running runs of
// workers whose heartbeat record expired to `retrying` (store/lost-workers.ts), so they stop
// counting against their tenant's cap and show what happened within one heartbeat TTL plus one
// sweep, instead of staying `running` until their job lock expires. Their jobs are re-delivered
// by BullMQ when the lock expires; the worker that takes one resumes from the last checkpoint.
import { releaseRunsOfLostWorkers } from '@anneal/store';
import type { AppContext } from '../context.ts';

export interface LostWorkerSweeper {
  /** One sweep now; resolves with the runs it released. */
  sweep(): Promise<Array<{ runId: string; workerId: string }>>;
  start(): void;
  close(): Promise<void>;
}

export interface SweeperLog {
  warn(details: object, message: string): void;
}

export function createLostWorkerSweeper(ctx: AppContext, log: SweeperLog): LostWorkerSweeper {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const tenants = Object.keys(ctx.operator.tenants);
  const sweep = async () => {
    const released = await releaseRunsOfLostWorkers(ctx.store, tenants);
    for (const { runId, workerId, paused } of released) {
      const to = paused ? 'paused (a pause was pending)' : 'retrying';
      log.warn({ runId, workerId }, `worker heartbeat expired: run moved to ${to}`);
    }
    return released;
  };
  return {
    sweep,
    start() {
      if (timer) return;
      timer = setInterval(() => {
        running = sweep().catch((error: unknown) =>
          log.warn({ err: String(error) }, 'lost-worker sweep failed; retrying next interval'),
        );
      }, ctx.settings.lostWorkerSweepMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
}
