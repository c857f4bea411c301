// IS-ratio statistics reported every step (docs/recipe.md §2): mean, min, max and the fraction of
// ratios outside [0.5, 2] (strictly below 0.5 or strictly above 2). Over zero ratios every
// statistic is NaN (no data, no made-up number).

export const RATIO_BAND_LOW = 0.5;
export const RATIO_BAND_HIGH = 2;

export interface RatioStats {
  mean: number;
  min: number;
  max: number;
  fractionOutside: number;
  count: number;
}

/** Statistics of a flat array of IS ratios (docs/recipe.md §2). */
export function ratioStats(
  ratios: ArrayLike<number>,
  low: number = RATIO_BAND_LOW,
  high: number = RATIO_BAND_HIGH,
): RatioStats {
  const count = ratios.length;
  if (count === 0) return { mean: NaN, min: NaN, max: NaN, fractionOutside: NaN, count };
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  let outside = 0;
  for (let t = 0; t < count; t++) {
    const ratio = ratios[t]!;
    sum += ratio;
    if (ratio < min) min = ratio;
    if (ratio > max) max = ratio;
    if (ratio < low || ratio > high) outside++;
  }
  return { mean: sum / count, min, max, fractionOutside: outside / count, count };
}
