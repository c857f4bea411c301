// The step loop every training executor shares: steps done+1 .. total, the stop signal checked
// at every step boundary, exactly one committed record per step, a checkpoint every
// `checkpointInterval` steps, at the last step, and when stopped early.
// Order at a checkpoint step: save weights and their sampler export (timed into the record) ->
// commit the step -> record the checkpoint (pointer + catalogue entry) -> retention. A crash
// between any two leaves a resume point at or before a committed step, and re-run steps
// re-commit idempotently: every step is recorded exactly once. Retention runs after the new
// checkpoint is recorded, so the resume point it protects is already the new one.
// Guardrails (docs/guardrails.md, guardrails/step-guard.ts) see each step's metrics before it is
// committed: a rollback takes the run back to its last clean checkpoint (the executor's
// `restore`) and the loop goes on from the step after it, in the next generation.
import type { TrainerModel } from '@anneal/engines';
import { toStepRecord } from '@anneal/protocol';
import { NonFiniteStepError } from '../../errors.ts';
import { METRIC, phaseKey, type StepRecordMetrics } from '../metrics.ts';
import type { CommitOutcome, ExecutorContext, RestorePoint } from '../types.ts';
import { type Epoch, FIRST_EPOCH } from './guardrails/epoch.ts';
import { StepGuard } from './guardrails/step-guard.ts';
import type { StepVerdict } from './guardrails/monitor.ts';

export type { Epoch } from './guardrails/epoch.ts';

export interface LoopOptions {
  ctx: ExecutorContext;
  model: TrainerModel;
  /** Steps already done (the resume point). */
  doneSteps: number;
  totalSteps: number;
  checkpointInterval: number;
  /** One training step; returns its metrics (phase timings included): the step-metric table's
   * record keys only (telemetry step-metrics.ts), so a typo fails to compile. `epoch`: the
   * generation's seed and learning-rate factor (guardrails/epoch.ts). */
  runStep(step: number, epoch: Epoch): Promise<StepRecordMetrics>;
  /** Extra metrics computed only at checkpoint steps (e.g. held-out accuracy). */
  atCheckpoint?(step: number): Promise<StepRecordMetrics>;
  /** Puts the trainer (and whatever serves its weights) back at `point` for `epoch`; returns
   * the model training goes on with. Absent: a rollback rule stops the run instead. */
  restore?(point: RestorePoint, epoch: Epoch): Promise<TrainerModel>;
  /** Awaited right before each commit: what must be on disk once the step is (the rollout
   * ledger's copy of the step). */
  beforeCommit?(step: number): Promise<void>;
  /** Right after each commit, with what it did (before the checkpoint pointer is recorded). */
  afterCommit?(step: number, outcome: CommitOutcome, rollbacks: number): Promise<void>;
}

export interface LoopResult {
  /** Last step done (committed), including steps done before a resume. */
  lastStep: number;
  /** Last training-state path saved (this session, else the resume point), or null. */
  checkpointPath: string | null;
  stopped: boolean;
  /** Metrics of the last step run in this session (empty when none ran). */
  lastMetrics: StepRecordMetrics;
  /** The generation the run ended in (0: no rollback). */
  epoch: Epoch;
}

/** A checkpoint's name; a step re-run after a guardrail rollback is saved under its own. */
export function checkpointName(runId: string, step: number, rollbacks = 0): string {
  const gen = rollbacks > 0 ? `-g${rollbacks}` : '';
  return `${runId}${gen}-step-${String(step).padStart(6, '0')}`;
}

interface SavedCheckpoint {
  path: string;
  samplerPath: string;
}

/** Training state plus a sampler export of the same weights: what `anneal runs export` writes
 * and what a fork's eval may serve directly. */
async function saveCheckpoint(model: TrainerModel, name: string): Promise<SavedCheckpoint> {
  const path = await model.saveWeights(name);
  const sampler = await model.saveWeightsForSampler(`${name}-sampler`);
  return { path, samplerPath: sampler.path };
}

/** Deletes on the trainer what retention retired; a failure leaves files behind (said as a
 * notice), never fails the run: the catalogue already says they are gone. */
async function deleteRetired(ctx: ExecutorContext, model: TrainerModel): Promise<void> {
  for (const retired of (await ctx.retireCheckpoints?.()) ?? []) {
    try {
      await model.deleteWeights?.(retired.path);
      if (retired.samplerPath) await model.deleteSamplerWeights?.(retired.samplerPath);
    } catch (error) {
      await ctx.notice?.({
        code: 'checkpoint_delete_failed',
        message: `checkpoint ${retired.step} (${retired.path}) was retired but deleting it on the trainer failed: ${String(error)}`,
      });
    }
  }
}

/** The step's metrics; a non-finite value that stopped the step is its metric, when a guard may
 * act on it (else the error as thrown). */
async function guardedStep(
  options: LoopOptions,
  guard: StepGuard | null,
  step: number,
  epoch: Epoch,
): Promise<{ metrics: StepRecordMetrics; failure?: NonFiniteStepError }> {
  try {
    return { metrics: await options.runStep(step, epoch) };
  } catch (error) {
    if (!guard || !(error instanceof NonFiniteStepError)) throw error;
    return { metrics: { [error.metric]: error.value } as StepRecordMetrics, failure: error };
  }
}

const intervenes = (verdict: StepVerdict | null) =>
  verdict?.action === 'rollback' || verdict?.action === 'stop';

export async function runTrainingLoop(options: LoopOptions): Promise<LoopResult> {
  const { ctx, totalSteps, checkpointInterval } = options;
  const guard = await StepGuard.open(ctx, options.doneSteps);
  let model = options.model;
  const commit = async (step: number, metrics: StepRecordMetrics, rollbacks: number) => {
    await options.beforeCommit?.(step);
    const outcome = await ctx.commitStep(step, toStepRecord(metrics), rollbacks);
    await options.afterCommit?.(step, outcome, rollbacks);
  };
  let checkpointPath = ctx.resumeFrom?.path ?? null;
  let checkpointStep = options.doneSteps;
  let lastStep = options.doneSteps;
  let lastMetrics: StepRecordMetrics = {};
  let stopped = false;
  for (let step = options.doneSteps + 1; step <= totalSteps; step++) {
    if (ctx.stopSignal.aborted) {
      stopped = true;
      break;
    }
    const epoch = guard?.epoch ?? FIRST_EPOCH(ctx.spec.seed);
    const start = performance.now();
    const { metrics, failure } = await guardedStep(options, guard, step, epoch);
    const verdict = guard?.observe(step, metrics) ?? null;
    if (guard && intervenes(verdict)) {
      const point = await guard.intervene(step, verdict!, metrics, options.restore !== undefined);
      if (point === null) {
        stopped = true; // the run is no longer this attempt's: stop at this boundary
        break;
      }
      model = await options.restore!(point, guard.epoch);
      checkpointPath = point.path;
      checkpointStep = point.step;
      lastStep = point.step;
      step = point.step; // the loop's step++ runs the step after the restored checkpoint next
      continue;
    }
    if (failure) throw failure;
    const isCheckpointStep = step % checkpointInterval === 0 || step === totalSteps;
    let savedPath: string | undefined;
    if (isCheckpointStep) {
      Object.assign(metrics, await options.atCheckpoint?.(step));
      const saveStart = performance.now();
      const saved = await saveCheckpoint(model, checkpointName(ctx.runId, step, epoch.rollbacks));
      metrics[phaseKey('checkpoint')] = (performance.now() - saveStart) / 1000;
      metrics[METRIC.stepSeconds] = (performance.now() - start) / 1000;
      await commit(step, metrics, epoch.rollbacks);
      await ctx.recordCheckpoint(step, saved.path, saved.samplerPath);
      // the safe checkpoint first: retention never retires it
      if (guard && verdict) await guard.afterCommit(step, verdict, saved.path);
      await deleteRetired(ctx, model);
      checkpointPath = saved.path;
      checkpointStep = step;
      savedPath = saved.path;
    } else {
      metrics[METRIC.stepSeconds] = (performance.now() - start) / 1000;
      await commit(step, metrics, epoch.rollbacks);
    }
    if (guard && verdict && savedPath === undefined) {
      await guard.afterCommit(step, verdict, undefined);
    }
    lastStep = step;
    lastMetrics = metrics;
  }
  const epoch = guard?.epoch ?? FIRST_EPOCH(ctx.spec.seed);
  if (stopped && lastStep > checkpointStep) {
    // Stopped between checkpoints: save the finished steps so the run resumes after them.
    const saved = await saveCheckpoint(model, checkpointName(ctx.runId, lastStep, epoch.rollbacks));
    await ctx.recordCheckpoint(lastStep, saved.path, saved.samplerPath);
    checkpointPath = saved.path;
  }
  return { lastStep, checkpointPath, stopped, lastMetrics, epoch };
}
