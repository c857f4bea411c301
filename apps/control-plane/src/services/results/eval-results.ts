// An eval run's results (GET /v1/runs/{id}/results): the run's step records, one per
// checkpoint × budget, turned into curves, knees and the cost–accuracy frontier by the same
// pure code the CLI uses (@anneal/envs evalCurves). Tenant-scoped like GET /v1/runs/{id}.
import { evalCurves, pricesFor } from '@anneal/envs/eval';
import { type EvalResults, type ModelRef, validateRunSpec } from '@anneal/protocol';
import { getRun, readSteps } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';

/** Steps of one eval are at most 16 checkpoints × 101 budgets. */
const MAX_STEPS = 16 * 101;

/** The label the worker gives a target: the source run id (`<run>@<step>` for a kept
 * checkpoint of it), else the base model's name. */
function labelOf(ref: ModelRef | undefined, defaultBase: string | undefined): string {
  const checkpoint = ref?.checkpoint;
  if (checkpoint?.step !== undefined) return `${checkpoint.run}@${checkpoint.step}`;
  return checkpoint?.run ?? ref?.base ?? defaultBase ?? 'base';
}

export async function evalResults(
  ctx: AppContext,
  tenant: string,
  runId: string,
): Promise<EvalResults> {
  const run = await getRun(ctx.store, runId, { tenant });
  if (!run) throw runNotFound(runId);
  if (run.kind !== 'eval') {
    throw new AnnealError(
      'ANNEAL_ERR_NOT_FOUND',
      `run '${runId}' is a ${run.kind} run; results exist for eval runs only`,
    );
  }
  // The stored spec is the resolved one submission checked; parsing it again types it (an eval
  // spec) instead of a cast, and a record that no longer parses is an error, not a wrong answer.
  const parsed = validateRunSpec(run.spec);
  if (!parsed.ok || parsed.value.kind !== 'eval') {
    throw new Error(`run '${runId}': stored spec is not a valid eval spec`);
  }
  const spec = parsed.value;
  const defaultBase = ctx.operator.defaults.baseModel;
  const refs = spec.models ?? [spec.model];
  const labels = refs.map((ref) => labelOf(ref, defaultBase));
  const budgets = spec.budgets?.toolCallBudgets ?? [];
  const steps = await readSteps(ctx.store, runId, { limit: MAX_STEPS });
  const curves = evalCurves(labels, budgets, steps);
  return {
    runId,
    state: run.state,
    datasets: spec.datasets ?? [],
    budgets: [...budgets],
    // the spec table on its own: pricesFor with no model entry to override it
    prices: pricesFor({ prices: spec.prices }, 0),
    ...curves,
    // what the worker costed each checkpoint's cells at (the same function)
    checkpoints: curves.checkpoints.map((c) => ({ ...c, prices: pricesFor(spec, c.index) })),
  };
}
