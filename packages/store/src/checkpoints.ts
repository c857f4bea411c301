// Checkpoint pointers: the latest checkpoint path + step per run, so a retried run resumes.
import type { CheckpointPointer, CheckpointSavedEvent } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';

/** Records a checkpoint; ignored (returns false) if an older step than the current pointer. */
export async function setCheckpoint(
  ctx: StoreContext,
  runId: string,
  checkpoint: { step: number; path: string },
  now: Date = new Date(),
): Promise<boolean> {
  const k = keys(ctx.prefix);
  const at = now.toISOString();
  const event: CheckpointSavedEvent = { type: 'checkpoint:saved', runId, ...checkpoint, at };
  const [status] = await runScript(
    ctx.redis,
    'annealSetCheckpoint',
    [k.run(runId), k.events(runId)],
    [checkpoint.step, checkpoint.path, at, JSON.stringify(event), EVENTS_MAX_LEN],
  );
  if (status === 'missing') throw new Error(`run ${runId} does not exist`);
  return status === 'saved';
}

export async function getCheckpoint(
  ctx: StoreContext,
  runId: string,
): Promise<CheckpointPointer | null> {
  const [step, path, at] = await ctx.redis.hmget(
    keys(ctx.prefix).run(runId),
    'checkpointStep',
    'checkpointPath',
    'checkpointAt',
  );
  if (step == null || path == null) return null;
  return { step: Number(step), path, at: at ?? '' };
}
