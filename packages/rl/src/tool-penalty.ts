// Anchored tool-call penalty, per GRPO group (docs/recipe.md §4):
//   W_g = {i : r_base = 1},  c̃_i = c_i − e_i (tool calls minus failed calls)
//   b_g ~ Uniform over the integers {min_{j∈W_g} c̃_j, …, ⌈mean_{j∈W_g} c̃_j⌉}   (seeded RNG)
//   Δ_i = max(0, c̃_i − b_g),  p_i = 1 − exp(−Δ_i)
//   pen_tool = α_win · p_i (winners),  α_lose · p_i + β_lose (losers)
// Decision (docs/recipe.md §4): with no winners there is no anchor: p_i = 0 for every rollout, losers
// still get β_lose, the baseline is null and the RNG is not consulted.
import { assertBinary, assertCounts, assertGroupLengths, assertNonNegative } from './checks.ts';
import type { Rng } from './rng.ts';

export interface ToolPenaltyParams {
  alphaWin: number;
  alphaLose: number;
  betaLose: number;
}

export interface ToolUsage {
  /** r_base ∈ {0, 1} per rollout. */
  baseReward: ArrayLike<number>;
  /** c_i: tool calls per rollout. */
  toolCalls: ArrayLike<number>;
  /** e_i: failed tool calls per rollout (<= c_i). */
  toolErrors: ArrayLike<number>;
}

export interface ToolPenalty {
  /** pen_tool per rollout (G,). */
  penalties: Float64Array;
  /** b_g, or null when the group has no winners. */
  baseline: number | null;
}

/** b_g drawn from the winners' effective call counts (docs/recipe.md §4); null without winners. */
export function drawToolBaseline(
  baseReward: ArrayLike<number>,
  effectiveCalls: ArrayLike<number>,
  rng: Rng,
): number | null {
  let winnerCount = 0;
  let winnerMin = Infinity;
  let winnerSum = 0;
  for (let i = 0; i < baseReward.length; i++) {
    if (baseReward[i] !== 1) continue;
    winnerCount++;
    winnerSum += effectiveCalls[i]!;
    winnerMin = Math.min(winnerMin, effectiveCalls[i]!);
  }
  if (winnerCount === 0) return null;
  const winnerMeanCeil = Math.ceil(winnerSum / winnerCount);
  return rng.int(winnerMin, winnerMeanCeil);
}

/** pen_tool for every rollout of one group (docs/recipe.md §4). */
export function anchoredToolPenalty(
  usage: ToolUsage,
  params: ToolPenaltyParams,
  rng: Rng,
): ToolPenalty {
  const size = assertGroupLengths({
    baseReward: usage.baseReward,
    toolCalls: usage.toolCalls,
    toolErrors: usage.toolErrors,
  });
  assertBinary(usage.baseReward, 'baseReward');
  assertCounts(usage.toolCalls, 'toolCalls');
  assertCounts(usage.toolErrors, 'toolErrors');
  for (const key of ['alphaWin', 'alphaLose', 'betaLose'] as const)
    assertNonNegative(params[key], key);
  const effectiveCalls = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    if (usage.toolErrors[i]! > usage.toolCalls[i]!)
      throw new RangeError(`toolErrors[${i}]: exceeds toolCalls`);
    effectiveCalls[i] = usage.toolCalls[i]! - usage.toolErrors[i]!;
  }
  const baseline = drawToolBaseline(usage.baseReward, effectiveCalls, rng);
  const penalties = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    const excessCalls = baseline === null ? 0 : Math.max(0, effectiveCalls[i]! - baseline); // Δ_i
    const smoothExcess = 1 - Math.exp(-excessCalls); // p_i
    const isWinner = usage.baseReward[i] === 1;
    penalties[i] = isWinner
      ? params.alphaWin * smoothExcess
      : params.alphaLose * smoothExcess + params.betaLose;
  }
  return { penalties, baseline };
}
