// The BullMQ processor: one job = one run (job id = run id). Follows the worker contract of
// packages/store/README.md: start (or take over) the run, resume from its checkpoint, run the
// executor of its kind with a stop signal, then settle the outcome.
import { DelayedError, type Job, UnrecoverableError, WaitingError } from 'bullmq';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  RunJobPayload,
  formatIssues,
  guardrailPolicy,
  kindRecordKeys,
  validateRunSpec,
  type RunResource,
  type RunSpec,
} from '@anneal/protocol';
import {
  type BudgetAtStart,
  appendRunNotice,
  finishRun,
  getRun,
  meterSlot,
  pauseReason,
  pauseWaitingRun,
  runArtifactDir,
  startRun,
} from '@anneal/store';
import type { TelemetryEmitter } from '@anneal/telemetry';
import type { WorkerConfig } from '../config.ts';
import { RunSetupError } from '../errors.ts';
import { type ExecutorResult, type ExecutorTable, executorFor } from '../executors/types.ts';
import type { ResourceResolver } from '../resources/resolve.ts';
import { type ServedWeights, trackServedWeights } from '../resources/served-weights.ts';
import {
  type SharedReferenceUse,
  sharedReferenceOf,
  unloadLeftReferences,
} from '../resources/shared-reference.ts';
import { type TrainedModels, trackTrainerModels } from '../resources/trained-models.ts';
import { abortableResources } from './abortable.ts';
import { ActiveRun, type ActiveRuns, type StopRequest } from './active-runs.ts';
import { type OutcomeDeps, type RunEnd, failed, stopped, succeed } from './outcome.ts';
import { BUDGET_NOTICE, budgetAtStartMessage, budgetMessage } from './budget.ts';
import { AttemptMeter } from './metering.ts';
import { type RunContextDeps, StepProgress, createExecutorContext } from './run-context.ts';

/** A run blocked by its tenant's concurrency cap or its endpoints' adapter slots is offered again
 * after this long. */
export const BLOCKED_RETRY_MS = 2_000;

/** Compiled once: the payload of every job is checked (BullMQ data is not ours to trust). */
const runJobPayload = TypeCompiler.Compile(RunJobPayload);

export type { ExecutorTable } from '../executors/types.ts';

export interface ProcessorDeps extends RunContextDeps, OutcomeDeps {
  config: Readonly<WorkerConfig>;
  executors: ExecutorTable;
  resolver: ResourceResolver;
  runs: ActiveRuns;
  telemetry: TelemetryEmitter;
  /** False while draining or shutting down: a job fetched in that window goes straight back. */
  accepting(): boolean;
  /** A stop every newly started run gets at once (shutdown or release-drain began meanwhile). */
  pendingStop(): StopRequest | null;
  onRunsChanged(): void;
}

export type RunJobResult = { runId: string; outcome: RunEnd | 'skipped' };

type Attempt = { ok: true; result: ExecutorResult } | { ok: false; error: unknown };

/** What the job does once the run has left `running` (set by the attempt). */
interface AfterRun {
  /** Unloads the shared references of the run's endpoint whose last user left (its own, when
   * it was the last; resources/shared-reference.ts). */
  unloadLeftReferences?: () => Promise<unknown>;
}

/** A training run's guardrails: its rules (spec + operator defaults, docs/guardrails.md) and what
 * its record says they did so far; none for eval. */
function guardrailsOf(config: Readonly<WorkerConfig>, run: RunResource, spec: RunSpec) {
  if (!('guardrails' in spec)) return {};
  const records = kindRecordKeys(spec.kind);
  const policy = guardrailPolicy(spec.guardrails, config.operatorConfig.guardrails, (metric) =>
    records.has(metric),
  );
  const state = run.guardrails;
  return {
    guardrails: {
      policy,
      rollbacks: state?.rollbacks ?? 0,
      learningRateScale: state?.learningRateScale ?? 1,
      safeCheckpoint: state?.safeCheckpoint ?? null,
    },
  };
}

/** Everything between "started" and the executor's return: setup errors are failures too. */
async function attempt(
  deps: ProcessorDeps,
  active: ActiveRun,
  run: RunResource,
  attemptNumber: number,
  progress: StepProgress,
  metering: AttemptMeter,
  afterRun: AfterRun,
): Promise<Attempt> {
  let served: ServedWeights | undefined;
  let trained: TrainedModels | undefined;
  let shared: SharedReferenceUse | undefined;
  try {
    const executor = executorFor(deps.executors, run.kind);
    if (!executor) throw new RunSetupError(`this worker has no executor for kind '${run.kind}'`);
    const parsed = validateRunSpec(run.spec);
    if (!parsed.ok)
      throw new RunSetupError(`stored spec is invalid:\n${formatIssues(parsed.errors)}`);
    const resolved = await deps.resolver.resolve({
      id: run.id,
      tenant: run.tenant,
      spec: parsed.value,
    });
    shared = sharedReferenceOf(deps.store, run, resolved.inference);
    const use = shared;
    if (use !== undefined) {
      const unload = () => unloadLeftReferences(deps.store, use.endpoint, resolved.inference);
      // Adapters left by runs whose worker died are unloaded before this one loads its own.
      await unload();
      afterRun.unloadLeftReferences = unload;
    }
    served = trackServedWeights(resolved.inference, run.id, () => use?.adapter());
    trained = trackTrainerModels(resolved.trainer);
    // A cancel mid-step abandons the step's engine calls at once (runtime/abortable.ts).
    const resources = abortableResources(
      {
        ...resolved,
        inference: served.engine,
        trainer: trained.engine,
        ...(use && { sharedReference: use.reference }),
      },
      active.abortSignal,
    );
    // The checkpoint pointer as the start transition read it: only this attempt may move it on.
    const checkpoint = run.checkpoint;
    const artifactDir = runArtifactDir(deps.config.artifactDir, run.id);
    const resumeFrom = checkpoint ? { step: checkpoint.step, path: checkpoint.path } : null;
    if (resumeFrom) deps.logger.info({ runId: run.id, ...resumeFrom }, 'resuming from checkpoint');
    progress.note(resumeFrom?.step ?? 0);
    const ctx = createExecutorContext(
      deps,
      active,
      {
        spec: parsed.value,
        resources,
        resumeFrom,
        artifactDir,
        ...guardrailsOf(deps.config, run, parsed.value),
        metering,
      },
      attemptNumber,
      progress,
    );
    return { ok: true, result: await executor(ctx) };
  } catch (error) {
    return { ok: false, error };
  } finally {
    // The run is over on this worker (a resumed attempt loads its weights again).
    for (const { name, error } of (await served?.release()) ?? []) {
      deps.logger.warn({ runId: run.id, weights: name, err: error }, 'releasing weights failed');
    }
    await shared?.leave().catch((error: unknown) => {
      deps.logger.warn({ runId: run.id, err: error }, 'leaving the shared reference failed');
    });
    // Its trainer models too, in the background: after a step abandoned by a cancel the trainer
    // frees a model only once it has finished that step, and the run must not wait for it.
    void trained?.release().then((failures) => {
      for (const { id, error } of failures) {
        deps.logger.warn(
          { runId: run.id, model: id, err: String(error) },
          'releasing a model failed',
        );
      }
    });
  }
}

async function settle(
  deps: ProcessorDeps,
  job: Job,
  token: string,
  active: ActiveRun,
  run: RunResource,
  outcome: Attempt,
  progress: StepProgress,
): Promise<RunEnd> {
  const stop = active.stopRequest;
  // An executor interrupted by a stop request may return `stopped` or throw an AbortError.
  if (stop && (!outcome.ok || outcome.result.stopped)) return stopped(deps, job, token, run, stop);
  // Redis lost what this attempt wrote: even a finished executor does not make the run succeed.
  if (stop?.kind === 'resync') return stopped(deps, job, token, run, stop);
  if (outcome.ok && !outcome.result.stopped) {
    return succeed(deps, job, token, run, outcome.result, progress.highest);
  }
  const error = outcome.ok
    ? new Error('the executor reported `stopped` although no stop was requested')
    : outcome.error;
  return failed(deps, job, run, error);
}

function attemptMeter(
  deps: ProcessorDeps,
  active: ActiveRun,
  run: RunResource,
  attemptNumber: number,
): AttemptMeter {
  return new AttemptMeter({
    tenant: run.tenant,
    prices: deps.config.operatorConfig.prices,
    attempt: attemptNumber,
    slotSinceMs: active.startedAtMs,
    async onBudget(reached, step) {
      const message = budgetMessage(reached, step, run.tenant);
      deps.logger.warn({ runId: run.id, ...reached, step }, message);
      await appendRunNotice(deps.store, run.id, { code: BUDGET_NOTICE, message }).catch(
        (error: unknown) => deps.logger.warn({ err: String(error) }, 'could not record the notice'),
      );
      return message;
    },
  });
}

/** A run whose cap was spent when it was to start waits `paused` by `budget` (its job ends here;
 * a resume adds a new one). A run a user paused or cancelled meanwhile is left as it is. */
async function pauseAtStart(
  deps: ProcessorDeps,
  runId: string,
  budget: BudgetAtStart,
  log: ProcessorDeps['logger'],
): Promise<void> {
  const tenant = (await getRun(deps.store, runId))?.tenant ?? '?';
  const message = budgetAtStartMessage(budget, tenant);
  const paused = await pauseWaitingRun(deps.store, runId, { by: 'budget', reason: message });
  log.warn({ ...budget, result: paused.status }, message);
  if (paused.status !== 'ok') return;
  await appendRunNotice(deps.store, runId, { code: BUDGET_NOTICE, message }).catch(
    (error: unknown) => log.warn({ err: String(error) }, 'could not record the notice'),
  );
}

/** The attempt's slot time through its end, before the run's outcome is written (so a read
 * after the run ended sees all of it). A failure here is logged: the outcome still settles. */
async function meterAttemptEnd(deps: ProcessorDeps, run: RunResource, meter: AttemptMeter) {
  const report = meter.report(null, undefined);
  try {
    const { metered } = await meterSlot(deps.store, run.id, report);
    if (metered) deps.telemetry.emit('usage:metered', meter.added(report));
  } catch (error) {
    deps.logger.warn({ runId: run.id, err: String(error) }, 'could not meter the slot time');
  }
}

export async function processRunJob(
  deps: ProcessorDeps,
  job: Job,
  token: string,
): Promise<RunJobResult> {
  if (!runJobPayload.Check(job.data)) {
    throw new UnrecoverableError(
      `job ${job.id}: payload is not {runId}: ${JSON.stringify(job.data)}`,
    );
  }
  const { runId } = job.data;
  const log = deps.logger.child({ runId, jobId: job.id });
  if (!deps.accepting()) {
    await job.moveToWait(token);
    throw new WaitingError('worker is draining or shutting down');
  }
  const started = await startRun(deps.store, runId, deps.workerId);
  if (started.status === 'blocked') {
    log.info(
      { reason: started.reason },
      'run blocked (tenant cap or adapter slots); offered again later',
    );
    await job.moveToDelayed(Date.now() + BLOCKED_RETRY_MS, token);
    throw new DelayedError(started.reason);
  }
  if (started.status === 'over-budget') {
    await pauseAtStart(deps, runId, started.budget, log);
    return { runId, outcome: 'skipped' };
  }
  if (started.status === 'not-startable') {
    log.info({ state: started.state }, 'run is not startable; dropping its job');
    return { runId, outcome: 'skipped' };
  }
  // The record as the start script left it (attempt, spec, checkpoint, cancel flag): no re-read.
  const { run } = started;
  const active = new ActiveRun(runId, run.kind, Date.now());
  deps.runs.add(active);
  const pending = deps.pendingStop();
  if (pending) active.stop(pending);
  deps.onRunsChanged();
  deps.telemetry.emit('run:started', { runId, kind: run.kind, pool: run.pool, atMs: Date.now() });
  log.info({ kind: run.kind, attempt: started.attempt }, 'run started');
  let end: RunEnd = 'failed';
  const afterRun: AfterRun = {};
  try {
    if (run.cancelRequested) {
      await finishRun(
        deps.store,
        runId,
        { state: 'cancelled', reason: 'cancelled before it started' },
        undefined,
        run,
      );
      end = 'cancelled';
      return { runId, outcome: end };
    }
    if (run.pause) {
      // Asked to pause while it was retrying (its worker was lost first): pause it now.
      end = await stopped(deps, job, token, run, {
        kind: 'pause',
        reason: pauseReason(run.pause),
      });
      return { runId, outcome: end };
    }
    const progress = new StepProgress();
    const meter = attemptMeter(deps, active, run, started.attempt);
    const outcome = await attempt(deps, active, run, started.attempt, progress, meter, afterRun);
    await meterAttemptEnd(deps, run, meter);
    end = await settle(deps, job, token, active, run, outcome, progress);
    return { runId, outcome: end };
  } catch (error) {
    // WaitingError = handed back; a retryable error = BullMQ retries it: both release the run.
    end = error instanceof UnrecoverableError ? 'failed' : 'released';
    throw error;
  } finally {
    // A run handed back leaves `running` after this (BullMQ's retry): its reference, if it was
    // the last user, is unloaded by the next run on the endpoint.
    await afterRun.unloadLeftReferences?.().catch((error: unknown) => {
      log.warn({ err: String(error) }, 'unloading shared references failed');
    });
    deps.runs.remove(runId);
    deps.onRunsChanged();
    deps.telemetry.emit('run:ended', { runId, reason: end, atMs: Date.now() });
  }
}
