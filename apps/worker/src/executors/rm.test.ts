import { describe, expect, it } from 'vitest';
import { pairAccuracy, pairData, pairOutcome } from './rm.ts';

describe('rm pairs (docs/recipe.md §5)', () => {
  const pair = { id: 'p', prompt: [1, 2], chosen: [3], rejected: [4, 5] };

  it('builds (x, y_a), (x, y_b) with r on the first datum, in either order', () => {
    const [a, b] = pairData(pair, false, 100);
    expect(a!.modelInput).toEqual([1, 2, 4, 5]);
    expect([...a!.lossFnInputs['label']!]).toEqual([0, 0, 0, 0]);
    expect(b!.modelInput).toEqual([1, 2, 3]);
    expect([...b!.lossFnInputs['label']!]).toEqual([1, 1, 1]);
    expect(pairData(pair, true, 3)[1]!.modelInput).toEqual([1, 2, 4]);
  });

  it('L_sym and the position-agnostic P̄ of the preferred response', () => {
    const out = pairOutcome(2, 0, 1); // y_a preferred, Δ = 2
    expect(out.loss).toBeCloseTo(Math.log1p(Math.exp(-2)), 9);
    expect(out.preferredProbability).toBeCloseTo(1 / (1 + Math.exp(-2)), 9);
    const swapped = pairOutcome(0, 2, 0); // the same pair shown the other way round
    expect(swapped.loss).toBeCloseTo(out.loss, 12);
    expect(swapped.preferredProbability).toBeCloseTo(out.preferredProbability, 12);
    expect(pairAccuracy([out, pairOutcome(1, 1, 1), pairOutcome(-1, 0, 1)])).toBeCloseTo(1 / 3, 9);
  });
});
