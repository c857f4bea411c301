import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocatePromptMix, samplePromptMix } from './prompt-mix.ts';
import { createRng } from './rng.ts';

// docs/recipe.md §3: 90 % verifiable QA, 10 % rubric (configurable weights).
describe('allocatePromptMix', () => {
  it.each([
    { weights: [0.9, 0.1], n: 10, expected: [9, 1] },
    { weights: [9, 1], n: 100, expected: [90, 10] }, // weights need not sum to 1
    { weights: [1, 0, 1], n: 4, expected: [2, 0, 2] }, // a zero-weight source is never drawn
    { weights: [1], n: 3, expected: [3] },
    { weights: [0.5, 0.5], n: 0, expected: [0, 0] },
  ])('$weights × $n → $expected for every seed', ({ weights, n, expected }) => {
    for (const seed of [1, 2, 3])
      expect(Array.from(allocatePromptMix(weights, n, createRng(seed)))).toEqual(expected);
  });

  it('is exact in expectation: n·w averaged over seeds', () => {
    const weights = [0.5, 0.3, 0.2];
    const totals = [0, 0, 0];
    const seeds = 3000;
    for (let seed = 0; seed < seeds; seed++) {
      allocatePromptMix(weights, 7, createRng(seed)).forEach((count, j) => (totals[j]! += count));
    }
    weights.forEach((w, j) => expect(totals[j]! / seeds).toBeCloseTo(7 * w, 1));
  });

  it('rejects bad weights and sizes', () => {
    expect(() => allocatePromptMix([], 1, createRng(1))).toThrow(/at least one/);
    expect(() => allocatePromptMix([0, 0], 1, createRng(1))).toThrow(/all be 0/);
    expect(() => allocatePromptMix([-1, 2], 1, createRng(1))).toThrow(/weights\[0\]/);
    expect(() => allocatePromptMix([1], 1.5, createRng(1))).toThrow(/n:/);
  });

  it('property: counts sum to n and stay within 1 of n·w', () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.double({ min: 0, max: 10, noNaN: true }), { minLength: 1, maxLength: 6 })
          .filter((w) => w.some((x) => x > 0)),
        fc.integer({ min: 0, max: 300 }),
        fc.nat(),
        (weights, n, seed) => {
          const counts = allocatePromptMix(weights, n, createRng(seed));
          const total = weights.reduce((a, b) => a + b, 0);
          expect(counts.reduce((a, b) => a + b, 0)).toBe(n);
          counts.forEach((count, j) =>
            expect(Math.abs(count - (n * weights[j]!) / total)).toBeLessThan(1 + 1e-9),
          );
        },
      ),
    );
  });
});

describe('samplePromptMix', () => {
  it('is deterministic per seed, shuffled, and matches the allocation', () => {
    const a = samplePromptMix([0.9, 0.1], 20, createRng(5));
    expect(Array.from(samplePromptMix([0.9, 0.1], 20, createRng(5)))).toEqual(Array.from(a));
    expect(a.filter((j) => j === 1)).toHaveLength(2);
    const orders = new Set(
      [1, 2, 3, 4, 5].map((seed) => samplePromptMix([0.9, 0.1], 20, createRng(seed)).join('')),
    );
    expect(orders.size).toBeGreaterThan(1);
  });
});
