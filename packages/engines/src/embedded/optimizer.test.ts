import { describe, expect, it } from 'vitest';
import { adamWStep, createAdamState, DEFAULT_ADAM_PARAMS, globalGradNorm } from './optimizer.ts';
import type { ParamLayout } from './params.ts';

// Two tensors: a decayed matrix [2] and a bias [1] that is never decayed.
const layout: ParamLayout = {
  config: { vocabSize: 1, blockSize: 1, nLayer: 1, nHead: 1, nEmbd: 1, head: 'lm' },
  tensors: [
    { name: 'w', shape: [2], offset: 0, size: 2, decay: true },
    { name: 'b', shape: [1], offset: 2, size: 1, decay: false },
  ],
  byName: new Map(),
  size: 3,
};

describe('adamWStep', () => {
  it('matches a hand-computed first step with decoupled weight decay', () => {
    const params = Float32Array.of(1, -2, 0.5);
    const grads = Float32Array.of(0.3, -0.4, 0);
    const state = createAdamState(3);
    const p = { ...DEFAULT_ADAM_PARAMS, learningRate: 0.1, weightDecay: 0.5, eps: 1e-8 };
    const { gradNorm, clipScale } = adamWStep(layout, params, grads, state, p);
    expect(gradNorm).toBeCloseTo(0.5, 6);
    expect(clipScale).toBe(1);
    // step 1: m̂ = g, v̂ = g² → update = lr·sign(g); decay multiplies by (1 − lr·wd) = 0.95
    expect(params[0]).toBeCloseTo(1 * 0.95 - 0.1, 5);
    expect(params[1]).toBeCloseTo(-2 * 0.95 + 0.1, 5);
    expect(params[2]).toBeCloseTo(0.5, 6); // zero grad, no decay on biases
    expect(Array.from(grads)).toEqual([0, 0, 0]); // zeroed for the next accumulation
    expect(state.step).toBe(1);
  });

  it('clips to gradClipNorm but reports the norm before clipping', () => {
    const params = Float32Array.of(0, 0, 0);
    const grads = Float32Array.of(3, 4, 0);
    const state = createAdamState(3);
    const p = { ...DEFAULT_ADAM_PARAMS, gradClipNorm: 1 };
    const { gradNorm, clipScale } = adamWStep(layout, params, grads, state, p);
    expect(gradNorm).toBeCloseTo(5, 6);
    expect(clipScale).toBeCloseTo(0.2, 6);
    expect(state.m[0]).toBeCloseTo((1 - 0.9) * 3 * 0.2, 6);
  });

  it('rejects bad params and non-finite gradients without touching the weights', () => {
    const params = Float32Array.of(1, 1, 1);
    const state = createAdamState(3);
    expect(() =>
      adamWStep(layout, params, new Float32Array(3), state, { ...DEFAULT_ADAM_PARAMS, beta2: 1 }),
    ).toThrow(/beta2/);
    expect(() =>
      adamWStep(layout, params, Float32Array.of(NaN, 0, 0), state, DEFAULT_ADAM_PARAMS),
    ).toThrow(/gradient norm/);
    expect(Array.from(params)).toEqual([1, 1, 1]);
    expect(globalGradNorm(Float32Array.of(1, 2, 2))).toBeCloseTo(3, 9);
  });
});
