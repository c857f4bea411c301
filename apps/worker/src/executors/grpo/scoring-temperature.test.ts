import type {
  AdamParams,
  Datum,
  ForwardResult,
  LossFn,
  LossFnConfig,
  OptimStepResult,
  SamplerWeights,
  TrainerModel,
} from '@anneal/engines';
import { describe, expect, it } from 'vitest';
import { scoredAtTemperature } from './scoring-temperature.ts';

/** Records the loss configs it is called with; its own state proves `this` is kept. */
class RecordingModel implements TrainerModel {
  readonly id = 'm-1';
  readonly configs: Array<[string, LossFnConfig | undefined]> = [];
  private steps = 0;
  forward(_d: readonly Datum[], _l: LossFn, config?: LossFnConfig): Promise<ForwardResult> {
    this.configs.push(['forward', config]);
    return Promise.resolve({ logprobs: [], metrics: {} });
  }
  forwardBackward(_d: readonly Datum[], _l: LossFn, config?: LossFnConfig): Promise<ForwardResult> {
    this.configs.push(['forwardBackward', config]);
    return Promise.resolve({ logprobs: [], metrics: {} });
  }
  optimStep(_p: AdamParams): Promise<OptimStepResult> {
    this.steps++;
    return Promise.resolve({ gradNorm: this.steps, metrics: {} });
  }
  saveWeights(name: string): Promise<string> {
    return Promise.resolve(name);
  }
  loadWeights(): Promise<void> {
    return Promise.resolve();
  }
  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return Promise.resolve({ name, path: name });
  }
}

describe('scoredAtTemperature', () => {
  it('adds the rollout temperature to every forward and forward_backward loss config', async () => {
    const model = new RecordingModel();
    const scored = scoredAtTemperature(model, 0.6);
    await scored.forward([], 'importance_sampling');
    await scored.forwardBackward([], 'importance_sampling', { clipLowThreshold: 0.8 });
    expect(model.configs).toEqual([
      ['forward', { temperature: 0.6 }],
      ['forwardBackward', { clipLowThreshold: 0.8, temperature: 0.6 }],
    ]);
    expect(scored.id).toBe('m-1');
    expect((await scored.optimStep({} as AdamParams)).gradNorm).toBe(1); // bound to the model
  });

  it('leaves the model untouched at T = 1 (Tinker-API trainers never see the field)', () => {
    const model = new RecordingModel();
    expect(scoredAtTemperature(model, 1)).toBe(model);
  });
});
