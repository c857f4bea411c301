// Runs whose worker is gone: a run stays `running` (and counts against its tenant's cap) until
// its job lock expires and another worker takes it over — a minute or more, and forever with no
// other worker. The control plane sweeps instead: a running run whose worker's heartbeat record
// has expired goes `retrying` at once, guarded so that a run meanwhile taken over (new attempt)
// or a worker that heartbeats again is left alone. A run with a pause pending goes `paused`
// instead: it was to stop at its last checkpoint anyway, and it waits for no worker.
import { PauseRequest, parseStored } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { pauseReason } from './pause.ts';
import { transitionRun } from './transitions.ts';

export interface ReleasedRun {
  runId: string;
  workerId: string;
  /** Set when a pending pause made it `paused` rather than `retrying`. */
  paused?: true;
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
      const [state, workerId, attempt, pauseJson] = await ctx.redis.hmget(
        k.run(runId),
        'state',
        'workerId',
        'attempt',
        'pause',
      );
      if (state !== 'running' || !workerId) continue;
      if ((await ctx.redis.exists(k.worker(workerId))) === 1) continue;
      const lost = `worker ${workerId} lost (heartbeat expired)`;
      const pause = pauseJson
        ? parseStored(PauseRequest, pauseJson, `${k.run(runId)} pause`)
        : null;
      const result = await transitionRun(ctx, runId, {
        ...(pause
          ? { to: 'paused', reason: `${pauseReason(pause)} (${lost})`, by: pause.by }
          : { to: 'retrying', reason: lost }),
        from: ['running'],
        guard: { attempt: Number(attempt), absentKey: k.worker(workerId) },
      });
      if (result.status === 'ok')
        released.push({ runId, workerId, ...(pause && { paused: true }) });
    }
  }
  return released;
}
