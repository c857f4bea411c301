// Worker events → anneal_run_* and anneal_worker_* metrics.
import type { StepCommitted, TelemetryEvents } from './events.ts';
import {
  KL_ESTIMATORS,
  RATIO_STATS,
  REWARD_COMPONENTS,
  STEP_PHASES,
  SUBSYSTEMS,
} from './labels.ts';
import type { MetricWriter } from './writer.ts';

export interface WorkerIdentity {
  pool: string;
  /** Worker id (pod or container hostname). */
  id: string;
}

type Handlers = { [K in keyof TelemetryEvents]?: (payload: TelemetryEvents[K]) => void };

function setIfPresent(
  w: MetricWriter,
  name: Parameters<MetricWriter['set']>[0],
  runId: string,
  value: number | undefined,
): void {
  if (value !== undefined) w.set(name, { run_id: runId }, value);
}

function requireCount(field: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`step:committed.${field} must be a finite count >= 0 (got ${value})`);
  }
  return value;
}

/** Gauges: the value at this step. Idempotent, so a replayed step simply sets them again. */
function writeStepGauges(w: MetricWriter, e: StepCommitted): void {
  const run = { run_id: e.runId };
  w.set('anneal_run_step', run, e.step);
  w.set('anneal_run_last_step_timestamp_seconds', run, e.atMs / 1000);
  setIfPresent(w, 'anneal_run_loss', e.runId, e.loss);
  setIfPresent(w, 'anneal_run_grad_norm', e.runId, e.gradNorm);
  for (const estimator of KL_ESTIMATORS) {
    const v = e.trainInferenceKl?.[estimator];
    if (v !== undefined) w.set('anneal_run_train_inference_kl', { ...run, estimator }, v);
  }
  if (e.importanceRatio) {
    for (const stat of RATIO_STATS) {
      w.set('anneal_run_importance_ratio', { ...run, stat }, e.importanceRatio[stat]);
    }
    const outside = e.importanceRatio.outOfRangeFraction;
    w.set('anneal_run_importance_ratio_out_of_range_ratio', run, outside);
  }
  for (const component of REWARD_COMPONENTS) {
    const reward = e.reward?.[component];
    if (reward !== undefined) w.set('anneal_run_reward', { ...run, component }, reward);
    const base = e.baseReward?.[component];
    if (base !== undefined) w.set('anneal_run_base_reward', { ...run, component }, base);
  }
  setIfPresent(w, 'anneal_run_preference_score', e.runId, e.preferenceScore);
  setIfPresent(w, 'anneal_run_tool_penalty', e.runId, e.toolPenalty);
  setIfPresent(w, 'anneal_run_length_penalty', e.runId, e.lengthPenalty);
  setIfPresent(w, 'anneal_run_tool_calls_per_rollout', e.runId, e.toolCallsPerRollout);
  setIfPresent(w, 'anneal_run_response_length_tokens', e.runId, e.responseTokens);
  setIfPresent(w, 'anneal_run_zero_variance_groups', e.runId, e.zeroVarianceGroups);
}

/** Counters and histograms accumulate, so they are written once per step number. */
function writeStepAccumulators(w: MetricWriter, e: StepCommitted): void {
  const run = { run_id: e.runId };
  for (const phase of STEP_PHASES) {
    const seconds = e.phaseSeconds?.[phase];
    if (seconds !== undefined) {
      w.observe('anneal_run_step_phase_duration_seconds', { ...run, phase }, seconds);
    }
  }
  if (e.rolloutTokens !== undefined) {
    w.inc('anneal_run_rollout_tokens_total', run, requireCount('rolloutTokens', e.rolloutTokens));
  }
  if (e.trainedTokens !== undefined) {
    w.inc('anneal_run_trained_tokens_total', run, requireCount('trainedTokens', e.trainedTokens));
  }
}

export interface RunSeriesControl {
  /** Removes the run's series after the grace period (so the last values get scraped). */
  scheduleRemoval(runId: string): void;
  cancelRemoval(runId: string): void;
}

export function workerHandlers(
  w: MetricWriter,
  worker: WorkerIdentity,
  runs: RunSeriesControl,
): Handlers {
  const me = { pool: worker.pool, worker: worker.id };
  // Error and retry counters exist at 0 from the start (one series per subsystem), so their
  // rates read 0 on a healthy worker instead of "no data", and the first error is a visible
  // increase rather than a series appearing.
  for (const subsystem of SUBSYSTEMS) {
    w.inc('anneal_worker_errors_total', { ...me, subsystem }, 0);
    w.inc('anneal_worker_retries_total', { ...me, subsystem }, 0);
  }
  /** Highest step number whose accumulators were written, per run (steps commit idempotently). */
  const lastStep = new Map<string, number>();
  return {
    'run:started': (e) => {
      runs.cancelRemoval(e.runId);
      w.set('anneal_run_info', { run_id: e.runId, kind: e.kind, pool: e.pool }, 1);
      w.set('anneal_run_last_step_timestamp_seconds', { run_id: e.runId }, e.atMs / 1000);
    },
    'run:ended': (e) => {
      lastStep.delete(e.runId);
      runs.scheduleRemoval(e.runId);
    },
    'step:committed': (e) => {
      if (!Number.isInteger(e.step) || e.step < 0) {
        throw new RangeError(`step:committed.step must be an integer >= 0 (got ${e.step})`);
      }
      writeStepGauges(w, e);
      const previous = lastStep.get(e.runId);
      if (previous !== undefined && e.step <= previous) return;
      writeStepAccumulators(w, e);
      lastStep.set(e.runId, e.step);
    },
    'worker:heartbeat': (e) =>
      w.set('anneal_worker_heartbeat_timestamp_seconds', me, e.atMs / 1000),
    'worker:slots': (e) => {
      w.set('anneal_worker_slots', me, e.total);
      w.set('anneal_worker_slots_busy', me, e.busy);
    },
    'request:started': (e) =>
      w.inc('anneal_worker_inflight_requests', { ...me, engine: e.engine }, 1),
    'request:finished': (e) => {
      w.inc('anneal_worker_inflight_requests', { ...me, engine: e.engine }, -1);
      const labels = { ...me, engine: e.engine, outcome: e.outcome };
      w.observe('anneal_worker_engine_request_duration_seconds', labels, e.durationSeconds);
    },
    'attempt:failed': (e) => {
      w.inc('anneal_worker_errors_total', { ...me, subsystem: e.subsystem });
      if (e.willRetry) w.inc('anneal_worker_retries_total', { ...me, subsystem: e.subsystem });
    },
  };
}
