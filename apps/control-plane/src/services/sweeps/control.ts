// POST /v1/sweeps/{id}/cancel, /pause and /resume: the run action applied to every run of the
// sweep it applies to (cancel and pause: every run not ended; resume: every paused run), one at
// a time, through the same services as the run routes. A run that ends meanwhile is skipped; any
// other refusal (a run whose budget is spent refuses a resume) is raised once every run was tried.
import { type SweepResource, TERMINAL_STATES } from '@anneal/protocol';
import { getSweep, runStates } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError } from '../../errors.ts';
import { cancelRun } from '../runs/cancel.ts';
import { pauseRun, resumePausedRun } from '../runs/pause.ts';
import { sweepView } from './view.ts';

export type SweepAction = 'cancel' | 'pause' | 'resume';

export const sweepNotFound = (id: string) =>
  new AnnealError('ANNEAL_ERR_SWEEP_NOT_FOUND', `no sweep '${id}' in this tenant`);

export async function controlSweep(
  ctx: AppContext,
  tenant: string,
  sweepId: string,
  action: SweepAction,
  asked: { principal: string; reason: string },
): Promise<SweepResource> {
  const record = await getSweep(ctx.store, sweepId, { tenant });
  if (!record) throw sweepNotFound(sweepId);
  const states = await runStates(
    ctx.store,
    record.runs.map((r) => r.id),
  );
  let refused: unknown;
  for (const [i, { id }] of record.runs.entries()) {
    const state = states[i]?.state;
    if (state === undefined || TERMINAL_STATES.has(state)) continue;
    try {
      if (action === 'cancel') await cancelRun(ctx, tenant, id, asked);
      else if (action === 'pause' && state !== 'paused') {
        await pauseRun(ctx, tenant, id, asked.reason);
      } else if (action === 'resume' && state === 'paused') {
        await resumePausedRun(ctx, tenant, id, asked.reason);
      }
    } catch (error) {
      const ended = error instanceof AnnealError && error.code === 'ANNEAL_ERR_RUN_FINISHED';
      if (!ended) refused ??= error;
    }
  }
  if (refused !== undefined) throw refused;
  return sweepView(ctx, record);
}
