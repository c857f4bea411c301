// Checkpoint pointers: the latest checkpoint path + step per run, so a retried run resumes.
import type { CheckpointPointer, CheckpointSavedEvent } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';
import type { WriteOptions } from './steps.ts';

export type SetCheckpointResult = 'saved' | 'stale' | 'fenced';

/** Records a checkpoint: `stale` (ignored) if older than the current pointer, `fenced` (refused,
 * counted) if `options.attempt` is no longer the run's running attempt. */
export async function setCheckpoint(
  ctx: StoreContext,
  runId: string,
  checkpoint: { step: number; path: string },
  options: WriteOptions = {},
): Promise<SetCheckpointResult> {
  const now = options.now ?? new Date();
  const k = keys(ctx.prefix);
  const at = now.toISOString();
  const event: CheckpointSavedEvent = { type: 'checkpoint:saved', runId, ...checkpoint, at };
  const [status] = await runScript(
    ctx.redis,
    'annealSetCheckpoint',
    [k.run(runId), k.events(runId)],
    [
      checkpoint.step,
      checkpoint.path,
      at,
      JSON.stringify(event),
      EVENTS_MAX_LEN,
      options.attempt ?? '',
    ],
  );
  if (status === 'missing') throw new Error(`run ${runId} does not exist`);
  return status === 'saved' ? 'saved' : status === 'fenced' ? 'fenced' : 'stale';
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
