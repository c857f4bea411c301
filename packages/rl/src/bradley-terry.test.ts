import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  btLoss,
  btLossGradient,
  logSigmoid,
  preferenceProbability,
  sigmoid,
  symmetricBtLoss,
} from './bradley-terry.ts';

// docs/recipe.md §5.
describe('btLoss', () => {
  it.each([
    { delta: 0, r: 1, expected: Math.LN2 },
    { delta: 2, r: 1, expected: 0.12692801104297263 }, // log(1 + e^−2)
    { delta: 2, r: 0, expected: 2.1269280110429727 }, // log(1 + e^2)
    { delta: 1, r: 0.5, expected: 0.5 * 0.31326168751822286 + 0.5 * 1.3132616875182228 },
    { delta: 800, r: 1, expected: 0 }, // no overflow
    { delta: -800, r: 1, expected: 800 },
  ])('Δ = $delta, r = $r', ({ delta, r, expected }) => {
    expect(btLoss(delta, r)).toBeCloseTo(expected, 10);
  });

  it('gradient σ(Δ) − r matches finite differences', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -20, max: 20, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (delta, r) => {
          const h = 1e-6;
          const numeric = (btLoss(delta + h, r) - btLoss(delta - h, r)) / (2 * h);
          expect(Math.abs(numeric - btLossGradient(delta, r))).toBeLessThan(1e-6);
        },
      ),
    );
  });

  it('sigmoid and logSigmoid are stable at the extremes', () => {
    expect(sigmoid(-1000)).toBe(0);
    expect(sigmoid(1000)).toBe(1);
    expect(logSigmoid(-1000)).toBe(-1000);
    expect(sigmoid(0)).toBe(0.5);
  });
});

describe('symmetricBtLoss and preferenceProbability', () => {
  it('hand-computed: Δ(a,b) = 2, Δ(b,a) = −1, r = 1', () => {
    // ½ log(1 + e^−2) + ½ log(1 + e^−1)
    expect(symmetricBtLoss(2, -1, 1)).toBeCloseTo(
      0.5 * 0.12692801104297263 + 0.5 * 0.31326168751822286,
      12,
    );
    // Δ̄ = ½ (2 − (−1)) = 1.5 → σ(1.5)
    expect(preferenceProbability(2, -1)).toBeCloseTo(0.8175744761936437, 12);
  });

  it('for a one-at-a-time scorer P̄ = σ(s_a − s_b) and ties give 0.5', () => {
    expect(preferenceProbability(1.2, -1.2)).toBeCloseTo(sigmoid(1.2), 12);
    expect(preferenceProbability(0, 0)).toBe(0.5);
  });

  const margin = fc.double({ min: -30, max: 30, noNaN: true });
  const label = fc.double({ min: 0, max: 1, noNaN: true });

  it('property: unchanged when a and b are swapped with r → 1 − r', () => {
    fc.assert(
      fc.property(margin, margin, label, (deltaAB, deltaBA, r) => {
        expect(symmetricBtLoss(deltaBA, deltaAB, 1 - r)).toBeCloseTo(
          symmetricBtLoss(deltaAB, deltaBA, r),
          12,
        );
      }),
    );
  });

  it('property: P̄(a, b) + P̄(b, a) = 1 (position-agnostic)', () => {
    fc.assert(
      fc.property(margin, margin, (deltaAB, deltaBA) => {
        expect(
          preferenceProbability(deltaAB, deltaBA) + preferenceProbability(deltaBA, deltaAB),
        ).toBeCloseTo(1, 12);
      }),
    );
  });
});
