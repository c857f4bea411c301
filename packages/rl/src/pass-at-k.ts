// Rubric calibration filter (docs/recipe.md §3, "pass@4 filter"): sample k responses per prompt, judge
// each against the full rubric set, and keep only prompts where 0 < passes < k (a prompt every
// sample passes or every sample fails carries no learning signal).

export const DEFAULT_CALIBRATION_K = 4;

/** Keep a prompt with `passes` of k responses passing? (docs/recipe.md §3). */
export function keepForCalibration(passes: number, k: number = DEFAULT_CALIBRATION_K): boolean {
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`k: must be an integer >= 1, got ${k}`);
  if (!Number.isInteger(passes) || passes < 0 || passes > k) {
    throw new RangeError(`passes: must be an integer in [0, ${k}], got ${passes}`);
  }
  return passes > 0 && passes < k;
}

/** Indices of the prompts the filter keeps, in input order. */
export function passAtKFilter(
  passes: ArrayLike<number>,
  k: number = DEFAULT_CALIBRATION_K,
): Int32Array {
  const kept: number[] = [];
  for (let i = 0; i < passes.length; i++) {
    if (keepForCalibration(passes[i]!, k)) kept.push(i);
  }
  return Int32Array.from(kept);
}
