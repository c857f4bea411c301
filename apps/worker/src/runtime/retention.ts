// Checkpoint retention of a running run (spec `checkpointRetention`, resolved over the operator
// defaults at submission): after each checkpoint, the catalogue's kept checkpoints are ranked by
// the policy (@anneal/protocol stepsToDrop) and each one it no longer keeps is retired in the
// store, which refuses the latest, protected ones and any a run may still start from, in the
// same script that marks it deleted; checkpoints of a line a guardrail rollback took back are
// retired too. The caller deletes the retired ones' files on the trainer.
import { type CheckpointRetention, type RunSpec, stepsToDrop } from '@anneal/protocol';
import { type StoreContext, listKeptCheckpoints, retireCheckpoint } from '@anneal/store';
import type { RetiredCheckpoint } from '../executors/types.ts';

export function retentionOf(spec: RunSpec): CheckpointRetention {
  return spec.kind === 'eval' ? {} : (spec.checkpointRetention ?? {});
}

export async function retireCheckpoints(
  store: StoreContext,
  runId: string,
  policy: CheckpointRetention,
  fence: { attempt: number },
): Promise<RetiredCheckpoint[]> {
  if (Object.keys(policy).length === 0) return []; // keeps everything: nothing to read
  const kept = await listKeptCheckpoints(store, runId);
  // The resume point is the newest checkpoint of the run's current line: one above it was saved
  // on a line a guardrail rollback took back (its steps re-run and re-checkpoint over it), so it
  // goes first and never counts as one of the newest.
  const latest = kept.find((c) => c.latest)?.step ?? -1;
  const current = kept.filter((c) => c.step <= latest);
  const rolledBack = kept.filter((c) => c.step > latest).map((c) => c.step);
  const always = new Set(
    current.filter((c) => c.latest || c.protections.length > 0).map((c) => c.step),
  );
  const metric = policy.keepBest?.metric;
  const candidates = current.map((c) => ({
    step: c.step,
    ...(metric !== undefined && { score: c.metrics?.[metric] ?? null }),
  }));
  const retired: RetiredCheckpoint[] = [];
  for (const step of [...rolledBack, ...stepsToDrop(candidates, policy, always)]) {
    const result = await retireCheckpoint(store, runId, step, fence);
    if (result.status === 'fenced') break; // the run is no longer this attempt's
    if (result.status === 'retired') {
      const { path, samplerPath } = result;
      retired.push({ step, path, ...(samplerPath !== undefined && { samplerPath }) });
    }
  }
  return retired;
}
