import { describe, expect, it } from 'vitest';
import type { Datum, LossFn } from '../types.ts';
import { runBatch } from './compute.ts';
import { checkDatum } from './losses.ts';
import { Transformer } from './model.ts';
import type { ModelConfig } from './params.ts';
import { paramLayout } from './params.ts';
import { createRng, normal } from './rng.ts';

// Gradient checks in float64: the same kernels run on Float64Array, so central differences
// with eps = 1e-5 agree with the hand-written backward to ~1e-7 relative.
const tiny = (head: ModelConfig['head']): ModelConfig => ({
  vocabSize: 11,
  blockSize: 8,
  nLayer: 2,
  nHead: 2,
  nEmbd: 8,
  head,
});

function randomModel(config: ModelConfig, seed: number): Transformer {
  const layout = paramLayout(config);
  const rng = createRng(seed);
  const params = new Float64Array(layout.size);
  for (let i = 0; i < params.length; i++) params[i] = 0.4 * normal(rng); // large: strong signal
  return new Transformer(config, params);
}

function lmData(model: Transformer, lossFn: LossFn): Datum[] {
  const rng = createRng(7);
  const V = model.config.vocabSize;
  const seqs = [
    [1, 4, 2, 9, 3, 3],
    [5, 0, 7, 10],
  ];
  return seqs.map((tokens) => {
    const T = tokens.length;
    const targets = Int32Array.from({ length: T }, () => Math.floor(rng() * V));
    const weights = Float32Array.from({ length: T }, (_, t) => (t === 0 ? 0 : 1));
    const advantages = Float32Array.from({ length: T }, (_, t) => (t % 2 === 0 ? 0.7 : -1.3));
    const datum: Datum = { modelInput: tokens, lossFnInputs: { target_tokens: targets, weights } };
    // sampling logprobs: the model's own ± 0.5, so PPO has clipped and unclipped tokens
    const own = runBatch(model, [checkDatum(datum, 0, 'cross_entropy')], 'cross_entropy', {}, null);
    const logp = own.outputs[0]!.logprobs;
    const sampling = Float32Array.from(logp, (v, t) => v + (t % 3 === 0 ? 0.5 : -0.5));
    if (lossFn !== 'cross_entropy') {
      datum.lossFnInputs = { target_tokens: targets, logprobs: sampling, advantages };
    }
    return datum;
  });
}

function btData(): Datum[] {
  return [
    { modelInput: [1, 2, 3, 4], lossFnInputs: { label: new Float32Array(4).fill(1) } },
    { modelInput: [1, 2, 9], lossFnInputs: {} },
    { modelInput: [6, 6, 0, 2, 5], lossFnInputs: { label: new Float32Array(5).fill(0.25) } },
    { modelInput: [6, 6, 0, 7, 7, 1], lossFnInputs: { label: new Float32Array(6).fill(0.75) } },
  ];
}

function gradientCheck(model: Transformer, data: Datum[], lossFn: LossFn): number {
  const checked = data.map((d, i) => checkDatum(d, i, lossFn));
  const grads = new Float64Array(model.params.length);
  runBatch(model, checked, lossFn, {}, grads);
  const eps = 1e-5;
  let worst = 0;
  let nonZero = 0;
  for (let i = 0; i < model.params.length; i++) {
    const saved = model.params[i]!;
    model.params[i] = saved + eps;
    const up = runBatch(model, checked, lossFn, {}, null).lossSum;
    model.params[i] = saved - eps;
    const down = runBatch(model, checked, lossFn, {}, null).lossSum;
    model.params[i] = saved;
    const numeric = (up - down) / (2 * eps);
    const analytic = grads[i]!;
    if (Math.abs(numeric) > 1e-6) nonZero++;
    const err =
      Math.abs(numeric - analytic) / Math.max(1e-3, Math.abs(numeric) + Math.abs(analytic));
    worst = Math.max(worst, err);
  }
  expect(nonZero).toBeGreaterThan(model.params.length / 4); // the check is not vacuous
  return worst;
}

describe('Transformer backward matches finite differences (float64)', () => {
  for (const lossFn of ['cross_entropy', 'importance_sampling', 'ppo'] as const) {
    it(`LM head, ${lossFn}`, () => {
      const model = randomModel(tiny('lm'), 1);
      expect(gradientCheck(model, lmData(model, lossFn), lossFn)).toBeLessThan(1e-6);
    });
  }

  it('value head, symmetric bradley_terry', () => {
    const model = randomModel(tiny('value'), 2);
    expect(gradientCheck(model, btData(), 'bradley_terry')).toBeLessThan(1e-6);
  });
});

describe('Transformer forward', () => {
  it('is causal: logits at t do not depend on tokens after t', () => {
    const model = randomModel(tiny('lm'), 3);
    const a = model.forward([1, 2, 3, 4, 5]);
    const b = model.forward([1, 2, 3, 9, 0]);
    const V = model.config.vocabSize;
    expect(Array.from(a.logits!.subarray(0, 3 * V))).toEqual(
      Array.from(b.logits!.subarray(0, 3 * V)),
    );
    expect(a.logits![3 * V]).not.toEqual(b.logits![3 * V]);
  });

  it('rejects sequences longer than blockSize and unknown token ids', () => {
    const model = randomModel(tiny('lm'), 4);
    expect(() => model.forward(new Array(9).fill(1))).toThrow(/blockSize/);
    expect(() => model.forward([1, 11])).toThrow(/outside the vocabulary/);
  });
});
