// Why a queued/retrying run is not running: the reason a worker recorded (tenant cap) wins;
// else it is derived from the facts the run view read (live workers, the tenant's running runs).
import type { WaitingFacts } from '@anneal/store';

export function waitingReason(
  run: { tenant: string; pool: string },
  facts: WaitingFacts | null,
): string | undefined {
  if (!facts) return undefined;
  const cap = facts.tenantCap;
  if (cap !== null && facts.tenantRunning >= cap) {
    return `tenant '${run.tenant}' is at its limit of ${cap} concurrently running runs`;
  }
  return facts.onlineWorkers === 0
    ? `no worker online in pool '${run.pool}'`
    : `waiting for a free slot in pool '${run.pool}'`;
}
