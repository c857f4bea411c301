// Group-relative advantages (docs/recipe.md §2, "Advantage"):
//   Â_i = R_i − mean_j R_j, or with normalizeStd: (R_i − mean_j R_j) / (std_j R_j + 1e-6).
// std is the population standard deviation (divide by G). A group whose rewards all tie has zero
// advantage exactly (not rounding noise from the mean) and is counted as a zero-variance group.

import { assertOffsets } from './ragged.ts';

export interface AdvantageOptions {
  /** Divide by std_j R_j + 1e-6 (docs/recipe.md §2 option `normalizeStd`). Default false. */
  normalizeStd?: boolean;
}

export const STD_EPSILON = 1e-6;

/** True when every reward in the group is identical (including a group of one or none). */
export function isZeroVarianceGroup(
  rewards: ArrayLike<number>,
  start = 0,
  end = rewards.length,
): boolean {
  for (let i = start + 1; i < end; i++) {
    if (rewards[i] !== rewards[start]) return false;
  }
  return true;
}

/** Write the advantages of rewards[start..end) into out[start..end); true if zero-variance. */
function writeGroupAdvantages(
  rewards: ArrayLike<number>,
  start: number,
  end: number,
  normalizeStd: boolean,
  out: Float64Array,
): boolean {
  if (isZeroVarianceGroup(rewards, start, end)) {
    out.fill(0, start, end);
    return true;
  }
  const groupSize = end - start;
  let rewardSum = 0;
  for (let i = start; i < end; i++) rewardSum += rewards[i]!;
  const mean = rewardSum / groupSize;
  let squaredDeviationSum = 0;
  for (let i = start; i < end; i++) squaredDeviationSum += (rewards[i]! - mean) ** 2;
  const std = Math.sqrt(squaredDeviationSum / groupSize);
  const scale = normalizeStd ? 1 / (std + STD_EPSILON) : 1;
  for (let i = start; i < end; i++) out[i] = (rewards[i]! - mean) * scale;
  return false;
}

/** Advantages of one GRPO group (docs/recipe.md §2). */
export function groupAdvantages(
  rewards: ArrayLike<number>,
  options: AdvantageOptions = {},
): Float64Array {
  const advantages = new Float64Array(rewards.length);
  writeGroupAdvantages(rewards, 0, rewards.length, options.normalizeStd ?? false, advantages);
  return advantages;
}

/**
 * Advantages of many groups in one flat array (docs/recipe.md §2): group g owns
 * rewards[groupOffsets[g] .. groupOffsets[g + 1]). Writes into `out` (allocated if omitted).
 */
export function batchGroupAdvantages(
  rewards: ArrayLike<number>,
  groupOffsets: Int32Array,
  options: AdvantageOptions = {},
  out: Float64Array = new Float64Array(rewards.length),
): { advantages: Float64Array; zeroVarianceGroups: number } {
  assertOffsets(groupOffsets, rewards.length);
  let zeroVarianceGroups = 0;
  for (let g = 0; g + 1 < groupOffsets.length; g++) {
    const isTied = writeGroupAdvantages(
      rewards,
      groupOffsets[g]!,
      groupOffsets[g + 1]!,
      options.normalizeStd ?? false,
      out,
    );
    if (isTied) zeroVarianceGroups++;
  }
  return { advantages: out, zeroVarianceGroups };
}
