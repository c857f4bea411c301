import { Registry, createMetrics } from '@anneal/telemetry';
import { describe, expect, it } from 'vitest';
import {
  METRIC,
  baseRewardKey,
  phaseKey,
  rewardKey,
  stepCommittedEvent,
  toolBaselineKey,
} from './metrics.ts';

describe('step-record keys', () => {
  // The keys are the wire format of GET /v1/runs/{id}/metrics, read by the CLI and the demo
  // report: deriving them from the table must not rename any.
  it('keep the names the record has always used', () => {
    expect(METRIC).toMatchObject({
      loss: 'loss',
      gradNorm: 'grad_norm',
      trainInferenceKl: 'train_inference_kl',
      trainInferenceKlK1: 'train_inference_kl/k1',
      isRatioMean: 'is_ratio/mean',
      isRatioMin: 'is_ratio/min',
      isRatioMax: 'is_ratio/max',
      isRatioOutOfRange: 'is_ratio/out_of_range_fraction',
      isMaskedFraction: 'is/masked_fraction',
      objective: 'grpo_objective',
      responseTokens: 'response_tokens',
      toolBaselineMean: 'tool_baseline/mean',
      groupsWithWinners: 'tool_baseline/groups',
      stepSeconds: 'step_seconds',
      heldOutPairAccuracy: 'heldout_pair_accuracy',
      toolCallsExecuted: 'tool_calls_per_rollout/executed',
      examples: 'examples',
    });
    expect(rewardKey('all')).toBe('reward/all');
    expect(baseRewardKey('qa')).toBe('base_reward/qa');
    expect(phaseKey('weight_sync')).toBe('phase_seconds/weight_sync');
    expect(toolBaselineKey(7)).toBe('tool_baseline/g7');
  });
});

describe('stepCommittedEvent', () => {
  it('carries a GRPO step record onto the anneal_run_* series the table maps it to', async () => {
    const sink = createMetrics(new Registry(), {
      app: 'worker',
      version: '0',
      worker: { pool: 'p', id: 'w' },
      runSeriesGraceMs: 0,
      defaultMetrics: false,
    });
    sink.emit(
      'step:committed',
      stepCommittedEvent('run_x', 4, 1000, {
        [METRIC.loss]: 0.5,
        [METRIC.gradNorm]: null,
        [METRIC.trainInferenceKl]: 0.002,
        [METRIC.trainInferenceKlK1]: -0.001,
        [METRIC.isRatioMax]: 1.2,
        [rewardKey('all')]: 0.3,
        [phaseKey('rollout')]: 2,
        [METRIC.rolloutTokens]: 100,
      }),
    );
    const text = await sink.registry.metrics();
    sink.close();
    for (const line of [
      'anneal_run_loss{run_id="run_x"} 0.5',
      'anneal_run_train_inference_kl{run_id="run_x",estimator="k3"} 0.002',
      'anneal_run_train_inference_kl{run_id="run_x",estimator="k1"} -0.001',
      'anneal_run_importance_ratio{run_id="run_x",stat="max"} 1.2',
      'anneal_run_reward{run_id="run_x",component="all"} 0.3',
      'anneal_run_step_phase_duration_seconds_sum{run_id="run_x",phase="rollout"} 2',
      'anneal_run_rollout_tokens_total{run_id="run_x"} 100',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).not.toContain('anneal_run_grad_norm{');
  });
});
