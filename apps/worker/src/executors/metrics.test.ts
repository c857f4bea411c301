import { describe, expect, it } from 'vitest';
import { METRIC, baseRewardKey, phaseKey, rewardKey, stepCommittedEvent } from './metrics.ts';

describe('stepCommittedEvent', () => {
  it('maps a GRPO step record onto telemetry step:committed', () => {
    const event = stepCommittedEvent('run_x', 4, 1000, {
      [METRIC.loss]: 0.5,
      [METRIC.gradNorm]: null,
      [METRIC.trainInferenceKl]: 0.002,
      [METRIC.trainInferenceKlK1]: -0.001,
      [METRIC.isRatioMean]: 1,
      [METRIC.isRatioMin]: 0.9,
      [METRIC.isRatioMax]: 1.2,
      [METRIC.isRatioOutOfRange]: 0,
      [rewardKey('all')]: 0.3,
      [rewardKey('rubric')]: null,
      [baseRewardKey('qa')]: 0.4,
      [phaseKey('rollout')]: 2,
      [METRIC.rolloutTokens]: 100,
      [METRIC.responseTokens]: NaN,
    });
    expect(event).toEqual({
      runId: 'run_x',
      step: 4,
      atMs: 1000,
      loss: 0.5,
      trainInferenceKl: { k1: -0.001, k3: 0.002 },
      importanceRatio: { mean: 1, min: 0.9, max: 1.2, outOfRangeFraction: 0 },
      reward: { all: 0.3 },
      baseReward: { qa: 0.4 },
      phaseSeconds: { rollout: 2 },
      rolloutTokens: 100,
    });
  });
});
