// The outcome fields a worker stores on a finished run's record (beside the API fields):
// `summary` (JSON) and `finalCheckpoint`, the path `model: {checkpoint: {run}}` resolves to.
import { parseStored } from '@anneal/protocol';
import { type StoreContext, keys } from '@anneal/store';
import { Type } from '@sinclair/typebox';

/** The summary an executor returned: an open object (each kind its own fields). */
const RunSummary = Type.Record(Type.String(), Type.Unknown());

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
  const key = keys(store.prefix).run(runId);
  const [summary, finalCheckpoint] = await store.redis.hmget(key, 'summary', 'finalCheckpoint');
  return {
    summary: summary ? parseStored(RunSummary, summary, `${key} summary`) : null,
    finalCheckpoint: finalCheckpoint || null,
  };
}
