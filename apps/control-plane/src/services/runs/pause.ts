// POST /v1/runs/{id}/pause and /resume: a waiting run pauses at once; a running one is asked to,
// and its worker pauses it at the next step boundary after a checkpoint (store/pause.ts). Resume
// queues a paused run again, or withdraws a pause its worker has not acted on yet; refused while
// a budget cap the run would spend past holds (usage.ts).
import { type RunResource, isTerminal } from '@anneal/protocol';
import { getRun, requestPause, resumeRun } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';
import { checkResumeBudget } from './usage.ts';

export interface PauseResult {
  run: RunResource;
  /** true: paused now (or already); false: requested, the worker will pause the run. */
  immediate: boolean;
}

async function mustGet(ctx: AppContext, tenant: string, runId: string): Promise<RunResource> {
  const run = await getRun(ctx.store, runId, { tenant, transitions: true });
  if (!run) throw runNotFound(runId);
  return run;
}

const finished = (runId: string, state: string) =>
  new AnnealError('ANNEAL_ERR_RUN_FINISHED', `run ${runId} already ${state}`);

export async function pauseRun(
  ctx: AppContext,
  tenant: string,
  runId: string,
  reason: string,
): Promise<PauseResult> {
  if (!(await getRun(ctx.store, runId, { tenant }))) throw runNotFound(runId);
  const outcome = await requestPause(ctx.store, ctx.queues, runId, { by: 'user', reason });
  if (outcome.status === 'missing') throw runNotFound(runId);
  if (outcome.status === 'finished') throw finished(runId, outcome.state);
  return { run: await mustGet(ctx, tenant, runId), immediate: outcome.status === 'paused' };
}

export async function resumePausedRun(
  ctx: AppContext,
  tenant: string,
  runId: string,
  reason: string,
): Promise<RunResource> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  if (isTerminal(run.state)) throw finished(runId, run.state);
  await checkResumeBudget(ctx, run);
  const outcome = await resumeRun(ctx.store, ctx.queues, runId, reason);
  if (outcome.status === 'missing') throw runNotFound(runId);
  if (outcome.status === 'finished') throw finished(runId, outcome.state);
  // Queued again: the run as the resume left it (a worker may have started it since).
  return outcome.status === 'queued' ? outcome.run : mustGet(ctx, tenant, runId);
}
