// Why a queued/retrying run is not running: the reason a worker recorded (tenant cap), else
// derived from the facts the run view read (live workers in the pool, the tenant's running runs).
import type { RunResource } from '@anneal/protocol';
import type { WaitingFacts } from '@anneal/store';

export function withWaitingReason(run: RunResource, facts: WaitingFacts | null): RunResource {
  if (!facts || run.waitingReason) return run;
  const cap = facts.tenantCap;
  const waitingReason =
    cap !== null && facts.tenantRunning >= cap
      ? `tenant '${run.tenant}' is at its limit of ${cap} concurrently running runs`
      : facts.onlineWorkers === 0
        ? `no worker online in pool '${run.pool}'`
        : `waiting for a free slot in pool '${run.pool}'`;
  return { ...run, waitingReason };
}
