// POST /v1/runs/{id}/cancel: a waiting or paused run is cancelled at once (job removed); a
// running run gets a cancel message its worker acts on at the next step boundary, after a final
// checkpoint.
import type { RunResource } from '@anneal/protocol';
import {
  getRun,
  markCancelRequested,
  removeQueuedJob,
  requestCancel,
  transitionRun,
} from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';

export interface CancelResult {
  run: RunResource;
  /** true: cancelled now; false: requested, the worker will stop the run. */
  immediate: boolean;
}

export async function cancelRun(
  ctx: AppContext,
  tenant: string,
  runId: string,
  asked: { principal: string; reason: string },
): Promise<CancelResult> {
  const { reason } = asked;
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  // Already cancelled: the same shape as the first cancel's answer (transitions included).
  if (run.state === 'cancelled') return { run: await mustGet(ctx, tenant, runId), immediate: true };
  if (run.state === 'succeeded' || run.state === 'failed') {
    throw new AnnealError('ANNEAL_ERR_RUN_FINISHED', `run ${runId} already ${run.state}`);
  }
  if (run.state === 'queued' || run.state === 'retrying' || run.state === 'paused') {
    await markCancelRequested(ctx.store, runId, asked);
    const result = await transitionRun(ctx.store, runId, {
      to: 'cancelled',
      from: ['queued', 'retrying', 'paused'],
      reason,
    });
    if (result.status === 'ok') {
      // A worker that already took the job finds the run cancelled and drops it.
      await removeQueuedJob(ctx.queues.get(run.pool), runId).catch(() => false);
      return { run: await mustGet(ctx, tenant, runId), immediate: true };
    }
  }
  // Running (or it started while we tried): the owning worker stops it at a step boundary.
  await requestCancel(ctx.store, runId, reason, asked.principal);
  return { run: await mustGet(ctx, tenant, runId), immediate: false };
}

async function mustGet(ctx: AppContext, tenant: string, runId: string): Promise<RunResource> {
  const run = await getRun(ctx.store, runId, { tenant, transitions: true });
  if (!run) throw runNotFound(runId);
  return run;
}
