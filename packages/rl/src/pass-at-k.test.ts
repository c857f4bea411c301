import { describe, expect, it } from 'vitest';
import { keepForCalibration, passAtKFilter } from './pass-at-k.ts';

// docs/recipe.md §3: keep prompts with 0 < passes < k (pass@4 by default).
describe('rubric calibration filter', () => {
  it.each([
    { passes: 0, k: 4, keep: false },
    { passes: 1, k: 4, keep: true },
    { passes: 3, k: 4, keep: true },
    { passes: 4, k: 4, keep: false },
    { passes: 1, k: 1, keep: false },
    { passes: 1, k: 2, keep: true },
  ])('$passes of $k → keep $keep', ({ passes, k, keep }) => {
    expect(keepForCalibration(passes, k)).toBe(keep);
  });

  it('returns kept indices in order', () => {
    expect(Array.from(passAtKFilter([0, 1, 2, 3, 4, 2]))).toEqual([1, 2, 3, 5]);
  });

  it('rejects impossible pass counts', () => {
    expect(() => keepForCalibration(5, 4)).toThrow(/passes/);
    expect(() => keepForCalibration(1.5, 4)).toThrow(/passes/);
    expect(() => keepForCalibration(0, 0)).toThrow(/k:/);
  });
});
