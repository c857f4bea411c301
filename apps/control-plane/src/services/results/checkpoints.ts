// A run's checkpoint catalogue (GET /v1/runs/{id}/checkpoints): every checkpoint it recorded,
// kept or deleted by retention, with its step's metrics and the runs that start from it.
// Tenant-scoped like GET /v1/runs/{id}.
import type { CheckpointList, CheckpointRetention } from '@anneal/protocol';
import { getRun, listCheckpoints } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { runNotFound } from '../../errors.ts';

export async function checkpointList(
  ctx: AppContext,
  tenant: string,
  runId: string,
): Promise<CheckpointList> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  const retention = (run.spec as { checkpointRetention?: CheckpointRetention }).checkpointRetention;
  return {
    runId,
    retention: retention ?? {},
    checkpoints: await listCheckpoints(ctx.store, runId),
  };
}
