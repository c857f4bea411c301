// The outcome fields a worker stores on a finished run's record (beside the API fields):
// `summary` (JSON) and `finalCheckpoint`, the path `model: {checkpoint: {run}}` resolves to.
import { type StoreContext, keys } from '@anneal/store';

export interface RunOutcome {
  summary: Record<string, unknown> | null;
  finalCheckpoint: string | null;
}

/** Hash fields written with the `succeeded` transition. */
export function outcomeFields(
  summary: Record<string, unknown>,
  finalCheckpoint: string | null,
): Record<string, string> {
  const fields: Record<string, string> = { summary: JSON.stringify(summary) };
  if (finalCheckpoint !== null) fields.finalCheckpoint = finalCheckpoint;
  return fields;
}

export async function readRunOutcome(store: StoreContext, runId: string): Promise<RunOutcome> {
  const [summary, finalCheckpoint] = await store.redis.hmget(
    keys(store.prefix).run(runId),
    'summary',
    'finalCheckpoint',
  );
  return {
    summary: summary ? (JSON.parse(summary) as Record<string, unknown>) : null,
    finalCheckpoint: finalCheckpoint || null,
  };
}
