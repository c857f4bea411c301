import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { grpoObjective } from './grpo-objective.ts';
import { tokenIsRatios } from './is-ratio.ts';
import { trainInferenceKl } from './kl.ts';
import { ratioStats } from './ratio-stats.ts';
import { stepTokenMathScalar as stepTokenMath } from './step-math.ts';

const LN2 = Math.LN2;

describe('stepTokenMath (docs/recipe.md §2 fused over the flat layout)', () => {
  it('hand-computed batch: ratios [1, 2 | 0.5], Â = [0.5, −0.5]', () => {
    const batch = {
      logpTrain: Float32Array.of(-1, -0.5, -2),
      logpInfer: Float32Array.of(-1, -0.5 - LN2, -2 + LN2),
      offsets: Int32Array.of(0, 2, 3),
      advantages: [0.5, -0.5],
    };
    // float32 inputs: ln 2 is rounded, so compare at float32 precision
    const metrics = stepTokenMath(batch);
    expect(metrics.tokens).toBe(3);
    expect(metrics.k1).toBeCloseTo((0 - LN2 + LN2) / 3, 6);
    expect(metrics.k3).toBeCloseTo((0 + (2 - 1 - LN2) + (0.5 - 1 + LN2)) / 3, 6);
    expect(metrics.ratioMean).toBeCloseTo(3.5 / 3, 6);
    expect(metrics.ratioMin).toBeCloseTo(0.5, 6);
    expect(metrics.ratioMax).toBeCloseTo(2, 6);
    expect(metrics.objective).toBeCloseTo(0.25, 6);
  });

  it('zero tokens: statistics are NaN, objective 0', () => {
    const empty = new Float32Array(0);
    const metrics = stepTokenMath({
      logpTrain: empty,
      logpInfer: empty,
      offsets: Int32Array.of(0, 0),
      advantages: [1],
    });
    expect(metrics.k3).toBeNaN();
    expect(metrics.ratioMin).toBeNaN();
    expect(metrics.objective).toBe(0);
  });

  it('property: agrees with the one-formula-per-function implementations', () => {
    const rolloutArb = fc.record({
      length: fc.integer({ min: 0, max: 20 }),
      advantage: fc.double({ min: -2, max: 2, noNaN: true }),
    });
    fc.assert(
      fc.property(
        fc.array(rolloutArb, { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (rollouts, seed) => {
          const offsets = new Int32Array(rollouts.length + 1);
          rollouts.forEach((r, i) => (offsets[i + 1] = offsets[i]! + r.length));
          const tokens = offsets[rollouts.length]!;
          if (tokens === 0) return;
          let state = seed;
          const noise = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
          const logpTrain = Float32Array.from({ length: tokens }, () => -5 * noise());
          const logpInfer = Float32Array.from(logpTrain, (lp) => lp + (noise() - 0.5) * 1.5);
          const advantages = rollouts.map((r) => r.advantage);
          const metrics = stepTokenMath({ logpTrain, logpInfer, offsets, advantages });

          const expectedRatios = tokenIsRatios(logpTrain, logpInfer);
          const stats = ratioStats(expectedRatios);
          const kl = trainInferenceKl(logpTrain, logpInfer);
          expect(metrics.k1).toBeCloseTo(kl.k1, 12);
          expect(metrics.k3).toBeCloseTo(kl.k3, 12);
          expect(metrics.ratioMean).toBeCloseTo(stats.mean, 12);
          expect(metrics).toMatchObject({
            ratioMin: stats.min,
            ratioMax: stats.max,
            ratioFractionOutside: stats.fractionOutside,
          });
          expect(metrics.objective).toBeCloseTo(
            grpoObjective({ logpTrain, logpInfer, offsets, advantages }),
            12,
          );
        },
      ),
    );
  });
});
