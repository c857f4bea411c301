// Pause and resume (docs/api.md "Pausing a run"). A run that waits to run (queued, retrying)
// pauses at once and loses its job; a running one gets a `pause` field and a control message,
// and its worker pauses it at the next step boundary, after a checkpoint, freeing its slot. The
// field holds the cause ({by, reason, requestedAt}); the worker's transition to `paused` requires
// it, so a resume that withdraws a pending pause and the worker acting on it cannot both win.
// Resume queues a paused run again (through the enqueue outbox): it continues from its
// checkpoint.
import type { Queue } from 'bullmq';
import {
  PauseRequest,
  parseStored,
  type PauseSource,
  type RunResource,
  type RunState,
  isTerminal,
} from '@anneal/protocol';
import { type StoreContext, keys } from './context.ts';
import { publishControl } from './control.ts';
import { acknowledged } from './durable.ts';
import { type PoolQueues, enqueueRun, removeQueuedJob } from './queues.ts';
import { getRun } from './runs.ts';
import { runScript } from './scripts.ts';
import { type RunOwner, type TransitionResult, transitionRun } from './transitions.ts';

/** Who or what asks for a pause, and why (the reason is shown on the run's transitions). */
export interface PauseCause {
  by: PauseSource;
  reason: string;
}

/** The transition reason of a pause: what paused the run, then why. */
export function pauseReason(cause: PauseCause): string {
  return `paused by ${cause.by}: ${cause.reason}`;
}

function pauseJson(cause: PauseCause, now: Date): string {
  const request: PauseRequest = {
    by: cause.by,
    reason: cause.reason,
    requestedAt: now.toISOString(),
  };
  return JSON.stringify(request);
}

export type PauseOutcome =
  /** Paused now (it waited to run), or `already` paused. */
  | { status: 'paused'; already: boolean }
  /** It runs: its worker pauses it at the next step boundary (an earlier pending pause, and its
   * cause, stay). */
  | { status: 'requested' }
  /** It has ended: there is nothing to pause. */
  | { status: 'finished'; state: RunState }
  | { status: 'missing' };

/** A run that keeps changing state under us (each pass sees a new one) is a bug, not a race. */
const MAX_PASSES = 5;

/**
 * Control-plane side: pauses `runId` (any tenant's: the caller checks ownership). Idempotent;
 * safe against a worker starting, finishing or losing the run meanwhile (each step is a
 * compare-and-set, and a lost race reads the new state and tries again).
 */
export async function requestPause(
  ctx: StoreContext,
  queues: PoolQueues,
  runId: string,
  cause: PauseCause,
  now: Date = new Date(),
): Promise<PauseOutcome> {
  const k = keys(ctx.prefix);
  const pause = pauseJson(cause, now);
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const [state, pool] = (await ctx.redis.hmget(k.run(runId), 'state', 'pool')) as [
      RunState | null,
      string | null,
    ];
    if (!state) return { status: 'missing' };
    if (state === 'paused') return { status: 'paused', already: true };
    if (isTerminal(state)) return { status: 'finished', state };
    if (state === 'queued' || state === 'retrying') {
      const result = await pauseWaitingRun(ctx, runId, cause, now);
      if (result.status === 'missing') return result;
      if (result.status !== 'ok') continue;
      // A worker that took the job meanwhile finds the run paused and drops the job.
      if (pool) await removeQueuedJob(queues.get(pool), runId).catch(() => false);
      return { status: 'paused', already: false };
    }
    const reply = await acknowledged(ctx, `pause of run ${runId}`, (redis) =>
      runScript(redis, 'annealRequestPause', [k.run(runId)], [pause, '']),
    );
    if (reply[0] === 'missing') return { status: 'missing' };
    if (reply[0] === 'state') continue;
    await publishControl(ctx, { type: 'pause', runId, reason: pauseReason(cause) });
    return { status: 'requested' };
  }
  throw new Error(`pause of run ${runId}: its state changed on each of ${MAX_PASSES} tries`);
}

/** queued | retrying -> paused, with its cause (the caller deals with the run's job). */
export function pauseWaitingRun(
  ctx: StoreContext,
  runId: string,
  cause: PauseCause,
  now: Date = new Date(),
): Promise<TransitionResult> {
  return transitionRun(ctx, runId, {
    to: 'paused',
    from: ['queued', 'retrying'],
    reason: pauseReason(cause),
    by: cause.by,
    fields: { pause: pauseJson(cause, now) },
    now,
  });
}

export type WorkerPauseResult = 'requested' | 'pending' | 'not-running' | 'fenced' | 'missing';

/**
 * Worker side: the run this worker holds in `attempt` asks to pause itself (a guardrail, a
 * budget). Records the cause; the caller stops the run at its next step boundary, where
 * `pauseAtBoundary` settles it. `pending`: a pause was asked for already (its cause stays).
 */
export async function markPauseRequested(
  ctx: StoreContext,
  runId: string,
  cause: PauseCause,
  fence: { attempt: number },
  now: Date = new Date(),
): Promise<WorkerPauseResult> {
  const reply = await acknowledged(ctx, `pause of run ${runId}`, (redis) =>
    runScript(
      redis,
      'annealRequestPause',
      [keys(ctx.prefix).run(runId)],
      [pauseJson(cause, now), fence.attempt],
    ),
  );
  if (reply[0] === 'state') return 'not-running';
  return reply[0] as WorkerPauseResult;
}

/** The run's pending pause (or, while paused, its cause); null when none. */
export async function getPauseRequest(
  ctx: StoreContext,
  runId: string,
): Promise<PauseRequest | null> {
  const key = keys(ctx.prefix).run(runId);
  const raw = await ctx.redis.hget(key, 'pause');
  return raw ? parseStored(PauseRequest, raw, `${key} pause`) : null;
}

/**
 * Worker side, once the executor stopped for a pause (its checkpoint recorded): running ->
 * paused in `attempt`, with the cause the run's `pause` field holds. `withdrawn`: a resume took
 * the pause back meanwhile; the run is still this worker's and should be handed back to the
 * queue (it continues from the same checkpoint).
 */
export async function pauseAtBoundary(
  ctx: StoreContext,
  runId: string,
  holder: { workerId: string; attempt: number; owner?: RunOwner },
): Promise<TransitionResult | { status: 'withdrawn' }> {
  const pending = await getPauseRequest(ctx, runId);
  const result = pending
    ? await transitionRun(ctx, runId, {
        to: 'paused',
        from: ['running'],
        reason: pauseReason(pending),
        by: pending.by,
        workerId: holder.workerId,
        guard: { attempt: holder.attempt, present: 'pause' },
        ...(holder.owner && { owner: holder.owner }),
      })
    : null;
  if (result && result.status !== 'conflict') return result;
  const [state, attempt, pause] = await ctx.redis.hmget(
    keys(ctx.prefix).run(runId),
    'state',
    'attempt',
    'pause',
  );
  const ours = state === 'running' && attempt === String(holder.attempt);
  if (ours && !pause) return { status: 'withdrawn' };
  return result ?? { status: 'conflict', state: (state ?? 'running') as RunState };
}

export type ResumeOutcome =
  /** It was paused: queued again (it continues from its checkpoint). `run`: as the resume left
   * it (with its transitions), before its job was added: a worker may start it at once. */
  | { status: 'queued'; run: RunResource }
  /** It had not paused yet: its pending pause is withdrawn and it keeps running. */
  | { status: 'withdrawn'; state: RunState }
  /** Not paused and no pause pending: nothing to do. */
  | { status: 'active'; state: RunState }
  | { status: 'finished'; state: RunState }
  | { status: 'missing' };

/**
 * Control-plane side: resumes `runId` (the caller checks ownership). Idempotent. A paused run
 * goes `queued` with an outbox entry, and its job is added here; when the job of its pause is
 * still finishing (the worker that paused it has not returned it yet) the entry stays and the
 * enqueue relay's sweep adds the job once it can.
 */
export async function resumeRun(
  ctx: StoreContext,
  queues: PoolQueues,
  runId: string,
  reason: string,
  now: Date = new Date(),
): Promise<ResumeOutcome> {
  const k = keys(ctx.prefix);
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const reply = await acknowledged(ctx, `resume of run ${runId}`, (redis) =>
      runScript(redis, 'annealWithdrawPause', [k.run(runId)], []),
    );
    const state = reply[1] as RunState;
    if (reply[0] === 'missing') return { status: 'missing' };
    if (reply[0] === 'withdrawn') return { status: 'withdrawn', state };
    if (reply[0] === 'none' || state === 'queued') return { status: 'active', state };
    if (isTerminal(state)) return { status: 'finished', state };
    await acknowledged(ctx, `outbox entry of run ${runId}`, (redis) =>
      redis.zadd(k.outbox(), now.getTime(), runId),
    );
    const result = await transitionRun(ctx, runId, {
      to: 'queued',
      from: ['paused'],
      reason,
      now,
    });
    if (result.status === 'missing') return result;
    if (result.status !== 'ok') continue;
    const run = await getRun(ctx, runId, { transitions: true });
    if (!run) return { status: 'missing' };
    if ((await requeueRun(queues.get(run.pool), run)) !== 'busy') {
      await ctx.redis.zrem(k.outbox(), runId);
    }
    return { status: 'queued', run };
  }
  throw new Error(`resume of run ${runId}: its state changed on each of ${MAX_PASSES} tries`);
}

/**
 * Adds the job of a run that had one before (it paused, or Redis lost it): a finished job of
 * the same id is removed first (BullMQ ignores an add whose id exists). `present`: its job still
 * waits; `busy`: a worker still holds the old one (it is finishing, or its holder is lost and
 * BullMQ re-delivers it): try again later.
 */
export async function requeueRun(
  queue: Queue,
  run: { id: string; priority: number },
): Promise<'added' | 'present' | 'busy'> {
  const state = await queue.getJobState(run.id);
  if (state === 'active') return 'busy';
  if (state === 'completed' || state === 'failed') {
    // Locked (a worker took it between the two calls): it is the busy case after all.
    if ((await queue.remove(run.id)) !== 1) return 'busy';
  } else if (state !== 'unknown') {
    return 'present';
  }
  await enqueueRun(queue, run);
  return 'added';
}

/** What the run's owner asked of it so far: a cancel (with the asker's text where one was
 * given), a pause (both flags in one read). */
export async function readStopRequests(
  ctx: StoreContext,
  runId: string,
): Promise<{ cancel: { reason: string | null } | null; pause: PauseRequest | null }> {
  const key = keys(ctx.prefix).run(runId);
  const [cancel, cancelReason, pause] = await ctx.redis.hmget(
    key,
    'cancelRequested',
    'cancelReason',
    'pause',
  );
  return {
    cancel: cancel === '1' ? { reason: cancelReason ?? null } : null,
    pause: pause ? parseStored(PauseRequest, pause, `${key} pause`) : null,
  };
}
