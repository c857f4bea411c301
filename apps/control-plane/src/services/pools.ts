// GET /v1/pools and the queue/pool gauges: registry + BullMQ counts + oldest waiting age.
import type { PoolStatus } from '@anneal/protocol';
import { listWorkers, oldestWaiting, queueCounts } from '@anneal/store';
import type { AppContext } from '../context.ts';

export async function observePools(ctx: AppContext, now: Date = new Date()): Promise<PoolStatus[]> {
  const workers = await listWorkers(ctx.store);
  const names = new Set([...Object.keys(ctx.operator.pools), ...workers.map((w) => w.pool)]);
  return Promise.all(
    [...names].sort().map(async (name): Promise<PoolStatus> => {
      const members = workers.filter((w) => w.pool === name);
      const [queue, oldest] = await Promise.all([
        queueCounts(ctx.queues.get(name)),
        oldestWaiting(ctx.store, name, now),
      ]);
      const total = members.reduce((sum, w) => sum + w.slots, 0);
      const busySlots = members.reduce((sum, w) => sum + Math.min(w.busy, w.slots), 0);
      return {
        name,
        slotsPerWorker: ctx.operator.pools[name]?.slots ?? 0,
        workers: {
          online: members.length,
          busy: members.filter((w) => w.busy > 0).length,
          draining: members.filter((w) => w.draining).length,
        },
        slots: { total, busy: busySlots, free: Math.max(0, total - busySlots) },
        queue,
        oldestWaitingAgeSeconds: oldest ? oldest.ageSeconds : null,
      };
    }),
  );
}
