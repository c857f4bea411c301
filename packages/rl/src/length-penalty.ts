// Anchored length penalty, per GRPO group (docs/recipe.md §4):
//   Ŵ_g = {i ∈ W_g : s_i >= 0.5}  (correct and preferred)
//   b_win = mean_{j∈Ŵ_g} L_j^ref,  b_lose = mean_{j∉Ŵ_g} L_j^ref
//   pen_len = 1                                      if L_i > max_j L_j^ref (hard cap, checked first)
//           = 1 − exp(−max(0, L_i / b_win − 1))     for i ∈ Ŵ_g (verbose winners)
//           = 1 − exp(−max(0, b_lose / L_i − 1))    for i ∉ Ŵ_g (terse losers)
// Edge cases (Anneal's decisions): b_win is only read for members of Ŵ_g and b_lose only for
// non-members, so an empty Ŵ_g or an empty complement never needs its baseline; it is reported
// as null. A ratio x/0 counts as +∞ when x > 0 (penalty 1: an empty loser answer is maximally
// terse when b_lose > 0; a winner longer than a zero b_win is maximally verbose) and 0/0 as no
// excess (penalty 0).
import { assertBinary, assertCounts, assertGroupLengths, assertUnitInterval } from './checks.ts';

export const PREFERRED_THRESHOLD = 0.5;

export interface LengthOutcomes {
  /** r_base ∈ {0, 1} (G,). */
  baseReward: ArrayLike<number>;
  /** s ∈ [0, 1] (G,). */
  preferenceScore: ArrayLike<number>;
  /** L_i in tokens (G,). */
  length: ArrayLike<number>;
  /** L_i^ref: length of the paired reference-model generation (G,). */
  refLength: ArrayLike<number>;
}

export interface LengthPenalty {
  penalties: Float64Array;
  winBaseline: number | null;
  loseBaseline: number | null;
  hardCap: number;
}

/** max(0, numerator / denominator − 1) with x/0 = +∞ for x > 0 and 0/0 = no excess. */
export function ratioExcess(numerator: number, denominator: number): number {
  if (denominator === 0) return numerator > 0 ? Infinity : 0;
  return Math.max(0, numerator / denominator - 1);
}

function meanRefLength(
  outcomes: LengthOutcomes,
  inShapingSet: Uint8Array,
  wanted: number,
): number | null {
  let sum = 0;
  let count = 0;
  for (let i = 0; i < inShapingSet.length; i++) {
    if (inShapingSet[i] !== wanted) continue;
    sum += outcomes.refLength[i]!;
    count++;
  }
  return count === 0 ? null : sum / count;
}

/** pen_len for every rollout of one group (docs/recipe.md §4). */
export function anchoredLengthPenalty(outcomes: LengthOutcomes): LengthPenalty {
  const { baseReward, preferenceScore, length, refLength } = outcomes;
  const size = assertGroupLengths({ baseReward, preferenceScore, length, refLength });
  assertBinary(baseReward, 'baseReward');
  assertUnitInterval(preferenceScore, 'preferenceScore');
  assertCounts(length, 'length');
  assertCounts(refLength, 'refLength');
  const inShapingSet = new Uint8Array(size);
  let hardCap = 0;
  for (let i = 0; i < size; i++) {
    inShapingSet[i] = baseReward[i] === 1 && preferenceScore[i]! >= PREFERRED_THRESHOLD ? 1 : 0;
    hardCap = Math.max(hardCap, refLength[i]!);
  }
  const winBaseline = meanRefLength(outcomes, inShapingSet, 1);
  const loseBaseline = meanRefLength(outcomes, inShapingSet, 0);
  const penalties = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    if (length[i]! > hardCap) {
      penalties[i] = 1; // hard cap, checked first
      continue;
    }
    const excess =
      inShapingSet[i] === 1
        ? ratioExcess(length[i]!, winBaseline!) // verbose winner
        : ratioExcess(loseBaseline!, length[i]!); // terse loser
    penalties[i] = 1 - Math.exp(-excess);
  }
  return { penalties, winBaseline, loseBaseline, hardCap };
}
