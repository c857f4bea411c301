import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { klK1, klK3, trainInferenceKl } from './kl.ts';
import { ratioStats } from './ratio-stats.ts';

// d_t = logp_infer − logp_train (docs/recipe.md §2).
describe('train–inference KL (docs/recipe.md §2)', () => {
  it.each([
    {
      name: 'd = [0.1, −0.2]',
      train: [-1.1, -0.3],
      infer: [-1.0, -0.5],
      // k1 = (0.1 − 0.2) / 2; k3 = ((e^−0.1 − 1 + 0.1) + (e^0.2 − 1 − 0.2)) / 2
      k1: -0.05,
      k3: (0.0048374180359595 + 0.0214027581601699) / 2,
    },
    { name: 'identical logprobs', train: [-3, -0.25], infer: [-3, -0.25], k1: 0, k3: 0 },
    {
      name: 'one token, d = ln 2',
      train: [-2 * Math.LN2],
      infer: [-Math.LN2],
      k1: Math.LN2,
      k3: 0.5 - 1 + Math.LN2,
    },
  ])('$name', ({ train, infer, k1, k3 }) => {
    const kl = trainInferenceKl(train, infer);
    expect(kl.k1).toBeCloseTo(k1, 12);
    expect(kl.k3).toBeCloseTo(k3, 12);
    expect(klK1(train, infer)).toBe(kl.k1);
    expect(klK3(train, infer)).toBe(kl.k3);
  });

  it('is NaN over zero tokens (no estimate)', () => {
    const kl = trainInferenceKl([], []);
    expect(kl.tokens).toBe(0);
    expect(kl.k1).toBeNaN();
    expect(kl.k3).toBeNaN();
  });

  it('property: k3 >= 0', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.double({ min: -30, max: 0, noNaN: true }),
            fc.double({ min: -30, max: 0, noNaN: true }),
          ),
          {
            minLength: 1,
            maxLength: 40,
          },
        ),
        (pairs) => {
          expect(
            klK3(
              pairs.map((p) => p[0]),
              pairs.map((p) => p[1]),
            ),
          ).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it('property: k3 >= 0 even for tiny mismatches (no cancellation below 0)', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e-9, max: 1e-9, noNaN: true }), (d) => {
        expect(klK3([-1], [-1 + d])).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});

describe('ratioStats (docs/recipe.md §2)', () => {
  it.each([
    {
      name: 'mixed',
      ratios: [1, 0.4, 2, 2.5],
      mean: 1.475,
      min: 0.4,
      max: 2.5,
      fractionOutside: 0.5,
    },
    {
      name: 'band edges are inside',
      ratios: [0.5, 2],
      mean: 1.25,
      min: 0.5,
      max: 2,
      fractionOutside: 0,
    },
    { name: 'all equal to 1', ratios: [1, 1, 1], mean: 1, min: 1, max: 1, fractionOutside: 0 },
  ])('$name', ({ ratios, mean, min, max, fractionOutside }) => {
    const stats = ratioStats(ratios);
    expect(stats.mean).toBeCloseTo(mean, 12);
    expect(stats).toMatchObject({ min, max, fractionOutside, count: ratios.length });
  });

  it('honours a custom band and is NaN when empty', () => {
    expect(ratioStats([0.8, 1.3], 0.9, 1.1).fractionOutside).toBe(1);
    expect(ratioStats([]).mean).toBeNaN();
  });
});
