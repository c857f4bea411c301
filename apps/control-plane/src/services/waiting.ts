// Why a queued/retrying run is not running: the reason a worker recorded (tenant cap), else
// derived now from the pool's live workers and the tenant's running count.
import type { RunResource } from '@anneal/protocol';
import { getTenantLimits, onlineWorkerCount, tenantRunningCount } from '@anneal/store';
import type { AppContext } from '../context.ts';

export async function withWaitingReason(ctx: AppContext, run: RunResource): Promise<RunResource> {
  if ((run.state !== 'queued' && run.state !== 'retrying') || run.waitingReason) return run;
  const [online, running, limits] = await Promise.all([
    onlineWorkerCount(ctx.store, run.pool, ctx.settings.workerTtlSeconds),
    tenantRunningCount(ctx.store, run.tenant),
    getTenantLimits(ctx.store, run.tenant),
  ]);
  const cap = limits.maxConcurrentRuns;
  const waitingReason =
    cap !== null && running >= cap
      ? `tenant '${run.tenant}' is at its limit of ${cap} concurrently running runs`
      : online === 0
        ? `no worker online in pool '${run.pool}'`
        : `waiting for a free slot in pool '${run.pool}'`;
  return { ...run, waitingReason };
}
