// The step loop every training executor shares: steps done+1 .. total, the stop signal checked
// at every step boundary, exactly one committed record per step, a checkpoint every
// `checkpointInterval` steps, at the last step, and when stopped early.
// Order at a checkpoint step: save weights and their sampler export (timed into the record) ->
// commit the step -> record the checkpoint (pointer + catalogue entry) -> retention. A crash
// between any two leaves a resume point at or before a committed step, and re-run steps
// re-commit idempotently: every step is recorded exactly once. Retention runs after the new
// checkpoint is recorded, so the resume point it protects is already the new one.
import type { TrainerModel } from '@anneal/engines';
import { toStepRecord } from '@anneal/telemetry';
import { METRIC, phaseKey, type StepRecordMetrics } from '../metrics.ts';
import type { ExecutorContext } from '../types.ts';

export interface LoopOptions {
  ctx: ExecutorContext;
  model: TrainerModel;
  /** Steps already done (the resume point). */
  doneSteps: number;
  totalSteps: number;
  checkpointInterval: number;
  /** One training step; returns its metrics (phase timings included): the step-metric table's
   * record keys only (telemetry step-metrics.ts), so a typo fails to compile. */
  runStep(step: number): Promise<StepRecordMetrics>;
  /** Extra metrics computed only at checkpoint steps (e.g. held-out accuracy). */
  atCheckpoint?(step: number): Promise<StepRecordMetrics>;
}

export interface LoopResult {
  /** Last step done (committed), including steps done before a resume. */
  lastStep: number;
  /** Last training-state path saved (this session, else the resume point), or null. */
  checkpointPath: string | null;
  stopped: boolean;
  /** Metrics of the last step run in this session (empty when none ran). */
  lastMetrics: StepRecordMetrics;
}

export function checkpointName(runId: string, step: number): string {
  return `${runId}-step-${String(step).padStart(6, '0')}`;
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

export async function runTrainingLoop(options: LoopOptions): Promise<LoopResult> {
  const { ctx, model, totalSteps, checkpointInterval } = options;
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
    const start = performance.now();
    const metrics = await options.runStep(step);
    const isCheckpointStep = step % checkpointInterval === 0 || step === totalSteps;
    if (isCheckpointStep) {
      Object.assign(metrics, await options.atCheckpoint?.(step));
      const saveStart = performance.now();
      const saved = await saveCheckpoint(model, checkpointName(ctx.runId, step));
      metrics[phaseKey('checkpoint')] = (performance.now() - saveStart) / 1000;
      metrics[METRIC.stepSeconds] = (performance.now() - start) / 1000;
      await ctx.commitStep(step, toStepRecord(metrics));
      await ctx.recordCheckpoint(step, saved.path, saved.samplerPath);
      await deleteRetired(ctx, model);
      checkpointPath = saved.path;
      checkpointStep = step;
    } else {
      metrics[METRIC.stepSeconds] = (performance.now() - start) / 1000;
      await ctx.commitStep(step, toStepRecord(metrics));
    }
    lastStep = step;
    lastMetrics = metrics;
  }
  if (stopped && lastStep > checkpointStep) {
    // Stopped between checkpoints: save the finished steps so the run resumes after them.
    const saved = await saveCheckpoint(model, checkpointName(ctx.runId, lastStep));
    await ctx.recordCheckpoint(lastStep, saved.path, saved.samplerPath);
    checkpointPath = saved.path;
  }
  return { lastStep, checkpointPath, stopped, lastMetrics };
}
