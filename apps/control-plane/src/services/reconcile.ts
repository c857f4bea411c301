// Start-up: write tenant limits to Redis (workers enforce them) and enqueue queued runs whose
// job a crash kept from reaching BullMQ (the run record is written before the job is added).
import type { OperatorConfig } from '@anneal/protocol';
import {
  type PoolQueues,
  type StoreContext,
  enqueueRun,
  getRun,
  listWaitingRuns,
  setTenantLimits,
} from '@anneal/store';

export async function reconcile(
  store: StoreContext,
  queues: PoolQueues,
  operator: OperatorConfig,
): Promise<{ enqueued: number }> {
  for (const [tenant, settings] of Object.entries(operator.tenants)) {
    await setTenantLimits(store, tenant, { maxConcurrentRuns: settings.maxConcurrentRuns });
  }
  let enqueued = 0;
  for (const pool of Object.keys(operator.pools)) {
    const queue = queues.get(pool);
    for (const runId of await listWaitingRuns(store, pool)) {
      const run = await getRun(store, runId);
      if (run?.state === 'queued' && !(await queue.getJob(runId))) {
        await enqueueRun(queue, run);
        enqueued += 1;
      }
    }
  }
  return { enqueued };
}
