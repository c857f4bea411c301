// The step loop every training executor shares: steps done+1 .. total, the stop signal checked
// at every step boundary, exactly one committed record per step, a checkpoint every
// `checkpointInterval` steps, at the last step, and when stopped early.
// Order at a checkpoint step: save weights (timed into the record) -> commit the step -> record
// the checkpoint pointer. A crash between any two leaves a resume point at or before a
// committed step, and re-run steps re-commit idempotently: every step is recorded exactly once.
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

async function timedSave(model: TrainerModel, name: string): Promise<[string, number]> {
  const start = performance.now();
  const path = await model.saveWeights(name);
  return [path, (performance.now() - start) / 1000];
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
      const [path, seconds] = await timedSave(model, checkpointName(ctx.runId, step));
      metrics[phaseKey('checkpoint')] = seconds;
      metrics[METRIC.stepSeconds] = (performance.now() - start) / 1000;
      await ctx.commitStep(step, toStepRecord(metrics));
      await ctx.recordCheckpoint(step, path);
      checkpointPath = path;
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
    checkpointPath = await model.saveWeights(checkpointName(ctx.runId, lastStep));
    await ctx.recordCheckpoint(lastStep, checkpointPath);
  }
  return { lastStep, checkpointPath, stopped, lastMetrics };
}
