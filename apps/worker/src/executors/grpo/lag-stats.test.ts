// statsByLag splits the step's IS statistics by policy lag (docs/recipe.md §2.6); its k3 terms
// are @anneal/rl kl.ts's, so at lag 0 the fresh series is the step's train_inference_kl.
import { trainInferenceKl } from '@anneal/rl';
import { describe, expect, it } from 'vitest';
import { statsByLag } from './lag-stats.ts';

describe('statsByLag', () => {
  it('splits ratio mean and k3 between fresh and lagged rollouts (hand-computed)', () => {
    // rollout 0 (fresh): r = [1, 2]; rollout 1 (lag 1): r = [0.5]
    const logpInfer = Float32Array.from([-1, -1, -1]);
    const logpTrain = Float32Array.from([-1, -1 + Math.LN2, -1 - Math.LN2]);
    const s = statsByLag({ offsets: Int32Array.from([0, 2, 3]), logpInfer, logpTrain }, [0, 1]);
    expect(s.fresh!.tokens).toBe(2);
    expect(s.fresh!.ratioMean).toBeCloseTo(1.5, 6);
    expect(s.fresh!.k3).toBeCloseTo((2 - 1 - Math.LN2) / 2, 6);
    expect(s.lagged!.ratioMean).toBeCloseTo(0.5, 6);
    expect(s.lagged!.k3).toBeCloseTo(0.5 - 1 + Math.LN2, 6);
    expect(statsByLag({ offsets: Int32Array.from([0, 1]), logpInfer, logpTrain }, [0]).lagged).toBe(
      null,
    );
  });

  it('keeps k3 of near-identical logprobs (|log r| ~ 1e-9) instead of cancelling it to 0', () => {
    // one float32 step apart at −0.01 (2^-30 ≈ 9.3e-10): k3 = d²/2 ≈ 4.3e-19 per token
    for (const k of [1, 2, 3, 5, 7]) {
      const logpInfer = Float32Array.from([-0.01]);
      const logpTrain = Float32Array.from([-0.01 + k * 2 ** -30]);
      const s = statsByLag({ offsets: Int32Array.from([0, 1]), logpInfer, logpTrain }, [0]);
      const reference = trainInferenceKl(logpTrain, logpInfer).k3;
      expect(reference).toBeGreaterThan(0);
      expect(s.fresh!.k3 / reference, `k = ${k}`).toBeCloseTo(1, 9);
    }
  });
});
