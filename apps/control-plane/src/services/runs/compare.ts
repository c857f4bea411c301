// GET /v1/runs/compare: runs of one kind side by side — the spec fields whose value differs
// between them (protocol specDifferences) and the metrics of each run's latest committed step.
import { type RunComparison, specDifferences } from '@anneal/protocol';
import { getRun, latestSteps } from '@anneal/store';
import type { AppContext } from '../../context.ts';
import { AnnealError, runNotFound } from '../../errors.ts';

export async function compareRuns(
  ctx: AppContext,
  tenant: string,
  ids: readonly string[],
): Promise<RunComparison> {
  const runs = await Promise.all(ids.map((id) => getRun(ctx.store, id, { tenant })));
  const found = runs.map((run, i) => {
    if (!run) throw runNotFound(ids[i]!);
    return run;
  });
  const first = found[0]!;
  const other = found.findIndex((run) => run.kind !== first.kind);
  if (other >= 0) {
    const message = `run ${found[other]!.id} is a ${found[other]!.kind} run, ${first.id} a ${first.kind} run: compare runs of one kind`;
    throw new AnnealError('ANNEAL_ERR_VALIDATION', message, [
      { path: `/query/run/${other}`, message },
    ]);
  }
  const { fields, values } = specDifferences(found.map((run) => run.spec));
  const latest = await latestSteps(ctx.store, ids);
  return {
    kind: first.kind,
    fields,
    runs: found.map((run, i) => {
      const step = latest[i];
      return {
        id: run.id,
        ...(run.name !== undefined && { name: run.name }),
        state: run.state,
        ...(run.lastStep !== undefined && { lastStep: run.lastStep }),
        differences: values[i]!,
        final: step ? { step: step.step, metrics: step.metrics } : null,
      };
    }),
  };
}
