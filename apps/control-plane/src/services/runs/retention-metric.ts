// Checkpoint retention's `keepBest.metric` must be a step-record key the run's kind records (the
// step-metric table of @anneal/telemetry, which the run-spec schema cannot see): a spec naming
// another is refused at submission, naming the field; an operator default naming one this kind
// does not record does not apply to it (it is dropped from the resolved spec).
import type { RunKind, RunSpec } from '@anneal/protocol';
import { STEP_METRICS, type StepMetricDefinition, recordBindings } from '@anneal/telemetry';
import { AnnealError } from '../../errors.ts';

const FIELD = '/checkpointRetention/keepBest/metric';

/** Concrete step-record keys of a kind, sorted. */
export function stepMetricKeys(kind: RunKind): string[] {
  const rows = Object.values(STEP_METRICS as Record<string, StepMetricDefinition>);
  return rows
    .filter((row) => row.kinds.includes(kind))
    .flatMap((row) => recordBindings(row).map((b) => b.key))
    .sort();
}

export function checkRetentionMetric(submitted: RunSpec, resolved: RunSpec): void {
  if (resolved.kind === 'eval') return;
  const metric = resolved.checkpointRetention?.keepBest?.metric;
  if (metric === undefined) return;
  const known = stepMetricKeys(resolved.kind);
  if (known.includes(metric)) return;
  const own = submitted.kind !== 'eval' && submitted.checkpointRetention?.keepBest !== undefined;
  if (!own) {
    // the operator default names a metric of other kinds
    delete resolved.checkpointRetention?.keepBest;
    return;
  }
  const message = `'${metric}' is not a step metric of ${resolved.kind} runs (known: ${known.join(', ')})`;
  throw new AnnealError('ANNEAL_ERR_RUN_SPEC_INVALID', `${FIELD}: ${message}`, [
    { path: FIELD, message },
  ]);
}
