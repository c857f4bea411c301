// A run's checkpoints: the resume pointer (the latest checkpoint path + step, so a retried run
// resumes) and the writes to the catalogue of every checkpoint the run recorded
// (`run:<id>:checkpoints`, one entry per step, indexed by step: checkpoint-catalogue.ts reads it),
// with retention's deletions, protections, and the runs that start from one.
import type {
  CheckpointPointer,
  CheckpointProtection,
  CheckpointSavedEvent,
} from '@anneal/protocol';
import { type StoredEntry, parseCatalogueEntry } from './checkpoint-catalogue.ts';
import { type StoreContext, keys } from './context.ts';
import { acknowledged } from './durable.ts';
import { runJobKeyParts } from './run-job-key.ts';
import { EVENTS_MAX_LEN, runScript } from './scripts.ts';
import type { WriteOptions } from './steps.ts';

export type SetCheckpointResult = 'saved' | 'stale' | 'fenced' | 'uncommitted';

export interface SetCheckpointOptions extends WriteOptions {
  /** Refuse (`uncommitted`) a step the run's step history does not hold. */
  requireStep?: boolean;
}

/** Records a checkpoint: `stale` (ignored) if older than the current pointer, `fenced` (refused,
 * counted) if `options.attempt` is no longer the run's running attempt, `uncommitted` (refused)
 * with `requireStep` when the step is not in the run's history. The same pointer twice is one.
 * A saved checkpoint is also catalogued, in the same script. */
export async function setCheckpoint(
  ctx: StoreContext,
  runId: string,
  checkpoint: { step: number; path: string; samplerPath?: string },
  options: SetCheckpointOptions = {},
): Promise<SetCheckpointResult> {
  const now = options.now ?? new Date();
  const k = keys(ctx.prefix);
  const at = now.toISOString();
  const { step, path, samplerPath } = checkpoint;
  const event: CheckpointSavedEvent = { type: 'checkpoint:saved', runId, step, path, at };
  const entry: StoredEntry = { step, at, path, ...(samplerPath && { samplerPath }) };
  const [status] = await acknowledged(ctx, `checkpoint ${step} of run ${runId}`, (redis) =>
    runScript(
      redis,
      'annealSetCheckpoint',
      [
        k.run(runId),
        k.events(runId),
        k.steps(runId),
        k.checkpoints(runId),
        k.checkpointsKept(runId),
        k.checkpointsDeleted(runId),
      ],
      [
        step,
        path,
        at,
        JSON.stringify(event),
        EVENTS_MAX_LEN,
        options.attempt ?? '',
        options.requireStep ? '1' : '',
        JSON.stringify(entry),
        ...runJobKeyParts(ctx.prefix, runId),
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

export type UseCheckpointResult = 'ok' | 'missing' | 'unknown' | 'deleted';

/** A run that will start from `source`'s checkpoint at `step` (a fork) takes a use of it
 * before the run is created: retention keeps it until that run no longer needs it. `missing`:
 * no such run in `tenant`; `unknown`: the source never recorded that step; `deleted`: retired. */
export async function useCheckpoint(
  ctx: StoreContext,
  source: { run: string; step: number; tenant: string },
  userRunId: string,
  now: Date = new Date(),
): Promise<UseCheckpointResult> {
  const k = keys(ctx.prefix);
  const [status] = await acknowledged(ctx, `use of ${source.run}@${source.step}`, (redis) =>
    runScript(
      redis,
      'annealUseCheckpoint',
      [k.run(source.run), k.checkpoints(source.run), k.checkpointUses(source.run)],
      [source.step, userRunId, source.tenant, now.getTime()],
    ),
  );
  if (status === 'ok' || status === 'missing' || status === 'unknown' || status === 'deleted') {
    return status;
  }
  throw new Error(`useCheckpoint: unexpected reply ${status}`);
}

/** Gives a use back (a submission that did not create its run). */
export async function releaseCheckpointUse(
  ctx: StoreContext,
  sourceRunId: string,
  userRunId: string,
): Promise<void> {
  await ctx.redis.hdel(keys(ctx.prefix).checkpointUses(sourceRunId), userRunId);
}

/** A use whose run was never created stops counting this long after it was taken. */
export const PENDING_USE_MS = 10 * 60_000;

export type RetireResult =
  | { status: 'retired'; path: string; samplerPath?: string }
  | { status: 'kept'; why: string }
  | { status: 'fenced' }
  | { status: 'unknown' };

/** Marks a checkpoint deleted in the catalogue, unless it is the latest, protected, or used by
 * a run that may still start from it; the caller then deletes its files (trainer / disk). */
export async function retireCheckpoint(
  ctx: StoreContext,
  runId: string,
  step: number,
  options: WriteOptions = {},
): Promise<RetireResult> {
  const now = options.now ?? new Date();
  const k = keys(ctx.prefix);
  const [status, detail = ''] = await acknowledged(ctx, `retiring ${runId}@${step}`, (redis) =>
    runScript(
      redis,
      'annealRetireCheckpoint',
      [
        k.run(runId),
        k.checkpoints(runId),
        k.checkpointUses(runId),
        k.checkpointsKept(runId),
        k.checkpointsDeleted(runId),
      ],
      [step, now.toISOString(), now.getTime(), ctx.prefix, PENDING_USE_MS, options.attempt ?? ''],
    ),
  );
  if (status === 'retired') {
    const entry = parseCatalogueEntry(detail, `${k.checkpoints(runId)} ${step}`);
    return {
      status,
      path: entry.path,
      ...(entry.samplerPath !== undefined && { samplerPath: entry.samplerPath }),
    };
  }
  if (status === 'kept') return { status, why: detail };
  if (status === 'fenced') return { status };
  return { status: 'unknown' };
}

export type ProtectResult = 'ok' | 'unknown' | 'deleted';

/** Protects a checkpoint from retention for `owner` (one protection per owner: a new one
 * replaces the owner's earlier one on that step). */
export async function protectCheckpoint(
  ctx: StoreContext,
  runId: string,
  step: number,
  protection: { owner: string; reason: string },
  now: Date = new Date(),
): Promise<ProtectResult> {
  const value: CheckpointProtection = { ...protection, at: now.toISOString() };
  return protectScript(ctx, runId, step, JSON.stringify(value), protection.owner);
}

/** Removes `owner`'s protection of a checkpoint (none: no-op). */
export function unprotectCheckpoint(
  ctx: StoreContext,
  runId: string,
  step: number,
  owner: string,
): Promise<ProtectResult> {
  return protectScript(ctx, runId, step, '', owner);
}

async function protectScript(
  ctx: StoreContext,
  runId: string,
  step: number,
  value: string,
  owner: string,
): Promise<ProtectResult> {
  const [status] = await acknowledged(ctx, `protection of ${runId}@${step}`, (redis) =>
    runScript(
      redis,
      'annealProtectCheckpoint',
      [keys(ctx.prefix).checkpoints(runId)],
      [step, value, owner],
    ),
  );
  if (status === 'ok' || status === 'unknown' || status === 'deleted') return status;
  throw new Error(`protectCheckpoint: unexpected reply ${status}`);
}
