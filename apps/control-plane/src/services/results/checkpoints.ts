// A run's checkpoint catalogue (GET /v1/runs/{id}/checkpoints), a page at a time: kept and/or
// deleted checkpoints in a step range, each with its step's metrics and the runs that start from
// it, beside a summary (kept count, deleted ones compacted to a count and a step range) and the
// run's retention. A page reads at most `limit + 1` steps, whatever the run's length.
// Tenant-scoped like GET /v1/runs/{id}.
import type { CheckpointList } from '@anneal/protocol';
import {
  type CheckpointStatusFilter,
  checkpointSummary,
  getRun,
  listCheckpoints,
} from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';
import {
  type SortOrder,
  decodeCursor,
  encodeCursor,
  listingDigest,
} from '../../infra/record-page.ts';

export interface CheckpointListQuery {
  status: CheckpointStatusFilter;
  from?: number;
  to?: number;
  order: SortOrder;
  limit: number;
  cursor?: string;
}

export async function checkpointList(
  ctx: AppContext,
  tenant: string,
  runId: string,
  q: CheckpointListQuery,
): Promise<CheckpointList> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  if (q.from !== undefined && q.to !== undefined && q.from > q.to) {
    const message = `must be at least from (${q.from})`;
    throw new AnnealError('ANNEAL_ERR_VALIDATION', `/query/to: ${message}`, [
      { path: '/query/to', message },
    ]);
  }
  const { cursor, limit, ...listing } = q;
  const digest = listingDigest(listing);
  const after = cursor === undefined ? undefined : decodeCursor(cursor, digest).key;
  const retention = 'checkpointRetention' in run.spec ? run.spec.checkpointRetention : undefined;
  const [summary, page] = await Promise.all([
    checkpointSummary(ctx.store, runId),
    listCheckpoints(ctx.store, runId, {
      ...listing,
      limit,
      ...(after !== undefined && after !== null && { after }),
    }),
  ]);
  const last = page.checkpoints.at(-1);
  return {
    runId,
    retention: retention ?? {},
    summary,
    checkpoints: page.checkpoints,
    nextCursor: page.more && last ? encodeCursor({ key: last.step, tie: '' }, digest) : null,
  };
}
