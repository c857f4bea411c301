// Checkpoint pointers: the latest checkpoint path + step per run, so a retried run resumes.
import type { CheckpointPointer, CheckpointSavedEvent } from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';
import type { WriteOptions } from './steps.ts';

export type SetCheckpointResult = 'saved' | 'stale' | 'fenced' | 'uncommitted';

export interface SetCheckpointOptions extends WriteOptions {
  /** Refuse (`uncommitted`) a step the run's step history does not hold. */
  requireStep?: boolean;
}

/** Records a checkpoint: `stale` (ignored) if older than the current pointer, `fenced` (refused,
 * counted) if `options.attempt` is no longer the run's running attempt, `uncommitted` (refused)
 * with `requireStep` when the step is not in the run's history. The same pointer twice is one. */
export async function setCheckpoint(
  ctx: StoreContext,
  runId: string,
  checkpoint: { step: number; path: string },
  options: SetCheckpointOptions = {},
): Promise<SetCheckpointResult> {
  const now = options.now ?? new Date();
  const k = keys(ctx.prefix);
  const at = now.toISOString();
  const event: CheckpointSavedEvent = { type: 'checkpoint:saved', runId, ...checkpoint, at };
  const [status] = await acknowledged(
    ctx,
    `checkpoint ${checkpoint.step} of run ${runId}`,
    (redis) =>
      runScript(
        redis,
        'annealSetCheckpoint',
        [k.run(runId), k.events(runId), k.steps(runId)],
        [
          checkpoint.step,
          checkpoint.path,
          at,
          JSON.stringify(event),
          EVENTS_MAX_LEN,
          options.attempt ?? '',
          options.requireStep ? '1' : '',
        ],
      ),
  );
  if (status === 'missing') throw new Error(`run ${runId} does not exist`);
  if (status === 'saved' || status === 'fenced' || status === 'uncommitted') return status;
  return 'stale';
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
