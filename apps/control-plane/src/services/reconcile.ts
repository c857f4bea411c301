// Start-up: write tenant limits to Redis (workers enforce them) and enqueue runs whose job a
// crash kept from reaching BullMQ.
import type { OperatorConfig } from '@anneal/protocol';
import {
  type PoolQueues,
  type StoreContext,
  enqueueRun,
  getRun,
  listUnenqueued,
  markEnqueued,
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
  for (const runId of await listUnenqueued(store)) {
    const run = await getRun(store, runId);
    if (run?.state === 'queued') {
      await enqueueRun(queues.get(run.pool), run);
      enqueued += 1;
    }
    await markEnqueued(store, runId);
  }
  return { enqueued };
}
