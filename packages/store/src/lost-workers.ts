// Runs whose worker is gone: a run stays `running` (and counts against its tenant's cap) until
// its job lock expires and another worker takes it over — a minute or more, and forever with no
// other worker. The control plane sweeps instead: a running run whose worker's heartbeat record
// has expired goes `retrying` at once, guarded so that a run meanwhile taken over (new attempt)
// or a worker that heartbeats again is left alone.
import { type StoreContext, keys } from './context.ts';
import { transitionRun } from './transitions.ts';

export interface ReleasedRun {
  runId: string;
  workerId: string;
}

/** Releases (running -> retrying) every running run of `tenants` whose worker's heartbeat record
 * has expired. Safe to run from several control planes at once. */
export async function releaseRunsOfLostWorkers(
  ctx: StoreContext,
  tenants: readonly string[],
): Promise<ReleasedRun[]> {
  const k = keys(ctx.prefix);
  const released: ReleasedRun[] = [];
  for (const tenant of tenants) {
    const runIds = await ctx.redis.smembers(k.tenantRunning(tenant));
    for (const runId of runIds) {
      const [state, workerId, attempt] = await ctx.redis.hmget(
        k.run(runId),
        'state',
        'workerId',
        'attempt',
      );
      if (state !== 'running' || !workerId) continue;
      if ((await ctx.redis.exists(k.worker(workerId))) === 1) continue;
      const result = await transitionRun(ctx, runId, {
        to: 'retrying',
        from: ['running'],
        reason: `worker ${workerId} lost (heartbeat expired)`,
        guard: { attempt: Number(attempt), absentKey: k.worker(workerId) },
      });
      if (result.status === 'ok') released.push({ runId, workerId });
    }
  }
  return released;
}
