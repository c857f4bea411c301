// POST /v1/sweeps: parse and expand the sweep (protocol parseSweep), validate every run as a
// POST /v1/runs would (issues placed under the grid value or base field that caused them), then
// write the sweep record and create its runs. The record lists the runs' ids before they exist,
// and each run is created under a key derived from the sweep: an Idempotency-Key replay of an
// interrupted submission finds the sweep and creates the runs it still lacks.
import { createHash } from 'node:crypto';
import {
  type Issue,
  SWEEP_LABEL,
  type SweepPoint,
  type SweepResource,
  type SweepSpec,
  formatIssues,
  parseSweep,
  sweepIssue,
} from '@anneal/protocol';
import { type SweepRecord, createSweep, getRun, newRunId, newSweepId } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError } from '../../errors.ts';
import {
  type ValidSubmission,
  canonicalJson,
  createSubmittedRun,
  validateSubmission,
} from '../runs/submit.ts';
import { checkTenantBudget } from '../runs/usage.ts';
import { sweepView } from './view.ts';

export interface SweepSubmission {
  tenant: string;
  /** Raw JSON or YAML text of the sweep document. */
  body: string;
  idempotencyKey?: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The run spec of a grid point in sweep `id`: the sweep's label (and labels), a name, and its
 * share of the sweep's budget. */
function runSpec(sweep: SweepSpec, id: string, point: SweepPoint, runs: number) {
  const spec = point.spec;
  const labels = (spec.labels ?? {}) as Record<string, string>;
  return {
    ...spec,
    labels: { ...sweep.labels, ...labels, [SWEEP_LABEL]: id },
    name: typeof spec.name === 'string' ? spec.name : `${sweep.name ?? id} #${point.index + 1}`,
    ...(sweep.budget && { budget: { maxUsd: sweep.budget.maxUsd / runs } }),
  };
}

/** Validates every run of sweep `id` like a submission; an issue names the sweep's field. */
async function validateRuns(
  ctx: AppContext,
  tenant: string,
  sweep: SweepSpec,
  points: readonly SweepPoint[],
  id: string,
): Promise<{ spec: Record<string, unknown>; valid: ValidSubmission }[]> {
  const out: { spec: Record<string, unknown>; valid: ValidSubmission }[] = [];
  for (const point of points) {
    const spec = runSpec(sweep, id, point, points.length);
    try {
      out.push({ spec, valid: await validateSubmission(ctx, tenant, JSON.stringify(spec)) });
    } catch (error) {
      if (!(error instanceof AnnealError)) throw error;
      const issues: Issue[] = (error.errors ?? []).map((e) => sweepIssue(point, sweep.grid, e));
      throw new AnnealError(
        error.code === 'ANNEAL_ERR_RUN_SPEC_INVALID' ? 'ANNEAL_ERR_SWEEP_INVALID' : error.code,
        issues.length > 0 ? formatIssues(issues) : error.detail,
        issues,
      );
    }
  }
  return out;
}

export async function submitSweep(
  ctx: AppContext,
  request: SweepSubmission,
): Promise<{ sweep: SweepResource; created: boolean }> {
  const parsed = parseSweep(request.body);
  if (!parsed.ok) {
    const code = parsed.tooLarge ? 'ANNEAL_ERR_SWEEP_TOO_LARGE' : 'ANNEAL_ERR_SWEEP_INVALID';
    throw new AnnealError(code, formatIssues(parsed.errors), parsed.errors);
  }
  const { sweep, kind, points } = parsed;
  const { tenant } = request;
  const id = newSweepId();
  let runs = await validateRuns(ctx, tenant, sweep, points, id);
  await checkTenantBudget(ctx, tenant);

  const record: SweepRecord = {
    id,
    tenant,
    ...(sweep.name !== undefined && { name: sweep.name }),
    labels: sweep.labels,
    kind,
    createdAt: new Date().toISOString(),
    grid: sweep.grid,
    ...(sweep.select && { select: sweep.select }),
    ...(sweep.budget && {
      budget: { maxUsd: sweep.budget.maxUsd, perRunUsd: sweep.budget.maxUsd / points.length },
    }),
    runs: points.map((p) => ({ id: newRunId(), values: p.values })),
  };
  const key = request.idempotencyKey;
  const result = await createSweep(
    ctx.store,
    record,
    key === undefined ? undefined : { key, bodyHash: sha256(canonicalJson(sweep)) },
  );
  if (result.status === 'conflict') {
    throw new AnnealError(
      'ANNEAL_ERR_IDEMPOTENCY_CONFLICT',
      `Idempotency-Key was first used for sweep ${result.sweepId} with a different body`,
    );
  }
  const target = result.sweep;
  // A replay: the runs carry the first submission's sweep id.
  if (target.id !== id) runs = await validateRuns(ctx, tenant, sweep, points, target.id);
  for (const [i, run] of target.runs.entries()) {
    if (await getRun(ctx.store, run.id)) continue;
    const { spec, valid } = runs[i]!;
    await createSubmittedRun(ctx, tenant, valid, {
      id: run.id,
      idempotency: { key: `${target.id}/${i}`, bodyHash: sha256(canonicalJson(spec)) },
    });
  }
  return { sweep: await sweepView(ctx, target), created: result.status === 'created' };
}
