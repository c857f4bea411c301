// What happens to a run after its executor returned or threw: succeeded (summary + final
// checkpoint), cancelled, paused, handed back to the queue, retried (BullMQ attempt left) or
// failed.
import { type Job, UnrecoverableError, WaitingError } from 'bullmq';
import {
  type StoreContext,
  appendRunNotice,
  finishRun,
  getCheckpoint,
  getRun,
  pauseAtBoundary,
  readSteps,
  releaseRun,
  type RunOwner,
  transitionRun,
  type TransitionResult,
} from '@anneal/store';
import { ENGINE_ERROR_CODES, EngineError } from '@anneal/engines';
import type { Logger } from '@anneal/telemetry';
import { GuardrailStopError, RunSetupError } from '../errors.ts';
import type { ExecutorResult } from '../executors/types.ts';
import { outcomeFields } from '../resources/run-outcome.ts';
import type { StopRequest } from './active-runs.ts';
import { DATA_LOST_NOTICE } from './run-context.ts';

export type RunEnd = 'succeeded' | 'failed' | 'cancelled' | 'paused' | 'released';

export interface OutcomeDeps {
  store: StoreContext;
  workerId: string;
  logger: Logger;
}

function note(logger: Logger, what: string, result: TransitionResult): void {
  if (result.status !== 'ok') logger.warn({ result }, `${what}: transition not applied`);
}

export function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && !error.message.includes(code)
    ? `${code}: ${error.message}`
    : error.message;
}

/** Steps of 1..through that the run's history lacks. */
async function missingSteps(store: StoreContext, runId: string, through: number) {
  const held = new Set((await readSteps(store, runId, { limit: 100_000 })).map((s) => s.step));
  return Array.from({ length: through }, (_, i) => i + 1).filter((step) => !held.has(step));
}

/** Every outcome names the run's tenant and pool from its start record (docs/performance.md
 * "Scheduling at fleet scale"): the settling transition needs no lookup round trip.
 * `through`: the highest step this attempt knows committed; a run whose history lacks any of
 * 1..through (Redis lost them in a failover) never succeeds: it resumes from its checkpoint
 * when that is below the first missing step, else it fails saying which steps are gone. */
export async function succeed(
  deps: OutcomeDeps,
  job: Job,
  token: string,
  owner: RunOwner,
  result: ExecutorResult,
  through: number,
): Promise<RunEnd> {
  const { store, workerId } = deps;
  const runId = job.id as string;
  // summary + finalCheckpoint: what later runs' `model: {checkpoint: {run}}` resolve to.
  const transition = await transitionRun(store, runId, {
    to: 'succeeded',
    from: ['running'],
    reason: `completed on worker ${workerId}`,
    workerId,
    owner,
    fields: outcomeFields(result.summary, result.finalCheckpoint),
    ...(through > 0 && { guard: { completeSteps: through } }),
  });
  if (transition.status !== 'incomplete') {
    note(deps.logger, 'succeeded', transition);
    return 'succeeded';
  }
  const missing = await missingSteps(store, runId, through);
  const checkpoint = await getCheckpoint(store, runId);
  const listed = `step(s) ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', …' : ''}`;
  if (missing.length > 0 && (checkpoint?.step ?? 0) < missing[0]!) {
    return handBack(
      deps,
      job,
      token,
      owner,
      resyncReason(`Redis lost ${listed} before the run could succeed`),
    );
  }
  const message =
    `Redis lost ${listed}, acknowledged before (a failover), and the run's checkpoint ` +
    `(step ${checkpoint?.step ?? 'none'}) is past them: its step history cannot be completed`;
  await appendRunNotice(store, runId, { code: DATA_LOST_NOTICE, message }).catch(() => null);
  note(
    deps.logger,
    'failed',
    await finishRun(
      store,
      runId,
      { state: 'failed', reason: message, error: message },
      workerId,
      owner,
    ),
  );
  throw new UnrecoverableError(message);
}

const resyncReason = (lost: string) => `${lost}; resuming from the checkpoint Redis holds`;

/** Hands the run back to the queue at a step boundary, to resume from the checkpoint Redis holds:
 * a drain or shutdown (`release`), or Redis lost writes this worker had acknowledged (`resync`).
 * Released (running -> retrying) while it is still this worker's, and its job waits again; a run
 * another worker holds, or that ended meanwhile, is left alone. */
async function handBack(
  deps: OutcomeDeps,
  job: Job,
  token: string,
  owner: RunOwner,
  reason: string,
): Promise<RunEnd> {
  const runId = job.id as string;
  const run = await getRun(deps.store, runId);
  const ours = run?.state === 'running' && run.workerId === deps.workerId;
  if (ours) {
    note(
      deps.logger,
      'released',
      await releaseRun(deps.store, runId, reason, deps.workerId, owner),
    );
  } else if (run?.state !== 'queued' && run?.state !== 'retrying') {
    deps.logger.warn({ runId, state: run?.state, reason }, 'run handed back is no longer ours');
    return 'released';
  }
  try {
    await job.moveToWait(token);
  } catch (error) {
    // Its lock went (with lost data, or to the sweep): BullMQ re-delivers the job when it finds
    // it stalled.
    deps.logger.warn({ runId, err: String(error) }, 'run handed back; its job lock is gone');
    return 'released';
  }
  throw new WaitingError(`run ${runId} handed back: ${reason}`);
}

/** The run is paused (its checkpoint recorded): running -> paused, and its job completes, so
 * the slot is free and nothing re-delivers it; a resume adds a new one. A pause withdrawn by a
 * resume meanwhile hands the run back instead: it continues from the same checkpoint. */
export async function paused(
  deps: OutcomeDeps,
  job: Job,
  token: string,
  run: RunOwner & { attempt: number },
  stop: StopRequest,
): Promise<RunEnd> {
  const runId = job.id as string;
  const { store, workerId } = deps;
  const result = await pauseAtBoundary(store, runId, {
    workerId,
    attempt: run.attempt,
    owner: run,
  });
  if (result.status === 'ok') return 'paused';
  if (result.status !== 'withdrawn') {
    // Lost meanwhile (another attempt holds it) or ended: leave its state alone.
    note(deps.logger, 'paused', result);
    return 'released';
  }
  const reason = `${stop.reason}; resumed before it paused`;
  note(deps.logger, 'released', await releaseRun(store, runId, reason, workerId, run));
  await job.moveToWait(token);
  throw new WaitingError(`run ${runId} handed back: its pause was withdrawn`);
}

/** The executor stopped at a step boundary because of `stop` (cancel, pause or hand back). */
export async function stopped(
  deps: OutcomeDeps,
  job: Job,
  token: string,
  owner: RunOwner & { attempt: number },
  stop: StopRequest,
): Promise<RunEnd> {
  const runId = job.id as string;
  if (stop.kind === 'resync') return handBack(deps, job, token, owner, resyncReason(stop.reason));
  if (stop.kind === 'release') return handBack(deps, job, token, owner, stop.reason);
  if (stop.kind === 'pause') return paused(deps, job, token, owner, stop);
  if (stop.kind === 'lost') {
    // Lost to another worker (its job lock expired and BullMQ re-delivered the job): leave it.
    // Lost to the control plane's sweep (this worker's heartbeat ran late): the run waits in
    // `retrying` and nobody holds its job but this worker, so hand the job back, or it would
    // complete here and strand the run.
    const run = await getRun(deps.store, runId);
    if (run?.state === 'retrying') {
      try {
        await job.moveToWait(token);
      } catch (error) {
        deps.logger.warn({ runId, err: String(error) }, 'run lost; its job lock is gone too');
        return 'released';
      }
      deps.logger.warn({ runId, reason: stop.reason }, 'run lost to the sweep; job handed back');
      throw new WaitingError(`run ${runId} handed back: ${stop.reason}`);
    }
    deps.logger.warn({ runId, reason: stop.reason }, 'run lost; leaving its state alone');
    return 'released';
  }
  // cancel: the run ends as cancelled.
  const result = await finishRun(
    deps.store,
    runId,
    { state: 'cancelled', reason: `cancelled: ${stop.reason}` },
    deps.workerId,
    owner,
  );
  note(deps.logger, 'cancelled', result);
  return 'cancelled';
}

/** Engine answers that a retry of the run would only meet again: the server refuses what the
 * run sends (these weights, this request, these credentials), not a passing fault. */
const PERMANENT_ENGINE_CODES: ReadonlySet<string> = new Set([
  ENGINE_ERROR_CODES.badAdapter,
  ENGINE_ERROR_CODES.validation,
  ENGINE_ERROR_CODES.unsupported,
]);

export function isPermanentEngineError(error: unknown): boolean {
  if (!(error instanceof EngineError) || error.retryable) return false;
  if (PERMANENT_ENGINE_CODES.has(error.code)) return true;
  const status = error.context.status;
  return error.code === ENGINE_ERROR_CODES.http && (status === 401 || status === 403);
}

/** The executor (or run setup) threw: retry while BullMQ attempts remain, else fail. Setup
 * errors, guardrail stops and permanent engine refusals fail at once (a retry would meet them
 * again). */
export async function failed(
  deps: OutcomeDeps,
  job: Job,
  owner: RunOwner,
  error: unknown,
): Promise<never> {
  const runId = job.id as string;
  const message = errorMessage(error);
  const attempts = job.opts.attempts ?? 1;
  const attempt = job.attemptsMade + 1;
  // A guardrail stop is final too: a retry would meet the same rule (docs/guardrails.md).
  const setup =
    error instanceof RunSetupError ||
    error instanceof GuardrailStopError ||
    isPermanentEngineError(error);
  if (!setup && attempt < attempts) {
    const reason = `attempt ${attempt}/${attempts} failed: ${message}; retrying from the last checkpoint`;
    note(
      deps.logger,
      'retrying',
      await releaseRun(deps.store, runId, reason, deps.workerId, owner),
    );
    throw error;
  }
  const reason = setup ? message : `failed after ${attempt} attempt(s): ${message}`;
  const result = await finishRun(
    deps.store,
    runId,
    { state: 'failed', reason, error: message },
    deps.workerId,
    owner,
  );
  note(deps.logger, 'failed', result);
  throw new UnrecoverableError(reason);
}
