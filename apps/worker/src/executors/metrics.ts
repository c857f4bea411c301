// The step-record keys executors commit, all derived from telemetry's step-metric table
// (packages/telemetry/src/step-metrics.ts): adding a metric is a row there, never an edit here.
// The record in Redis and the anneal_run_* series carry the same numbers because the metrics
// sink maps the committed record with that same table. `null` = the backend did not report it.
import { STEP_METRICS, type StepCommitted } from '@anneal/telemetry';
import { recordKey, singleKeys, type RewardComponent, type StepPhase } from '@anneal/protocol';

export type { StepPhase } from '@anneal/protocol';
export type { StepRecordMetrics } from '@anneal/protocol';

/**
 * Record key of each single-key row, by row id (METRIC.loss = 'loss'), plus the keys executors
 * name directly of labelled rows: k3 is the reported train–inference KL (docs/recipe.md §2).
 */
export const METRIC = {
  ...singleKeys(),
  trainInferenceKl: recordKey(STEP_METRICS.trainInferenceKl, 'k3'),
  trainInferenceKlK1: recordKey(STEP_METRICS.trainInferenceKl, 'k1'),
  isRatioMean: recordKey(STEP_METRICS.isRatio, 'mean'),
  isRatioMin: recordKey(STEP_METRICS.isRatio, 'min'),
  isRatioMax: recordKey(STEP_METRICS.isRatio, 'max'),
} as const;

export const rewardKey = <C extends RewardComponent>(component: C) =>
  recordKey(STEP_METRICS.reward, component);
export const baseRewardKey = <C extends RewardComponent>(component: C) =>
  recordKey(STEP_METRICS.baseReward, component);
export const phaseKey = <P extends StepPhase>(phase: P) =>
  recordKey(STEP_METRICS.phaseSeconds, phase);
/** b_g of group g of the step (null when the group has no winners). */
export const toolBaselineKey = (group: number) =>
  recordKey(STEP_METRICS.toolBaseline, `${group}` as `${number}`);

/** A committed step record as telemetry's `step:committed` payload. */
export function stepCommittedEvent(
  runId: string,
  step: number,
  atMs: number,
  metrics: Readonly<Record<string, number | null>>,
): StepCommitted {
  return { runId, step, atMs, metrics };
}
