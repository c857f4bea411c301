// One GRPO group from outcomes to advantages (RECIPE.md §4 then §2): anchored tool and length
// penalties, efficiency penalty, gated composite reward, group-relative advantage. This is what the
// worker runs per group and what `anneal reward score` prints.
import { groupAdvantages, isZeroVarianceGroup } from './advantages.ts';
import { compositeRewards } from './composite-reward.ts';
import { efficiencyPenalties } from './efficiency-penalty.ts';
import { anchoredLengthPenalty, type LengthOutcomes } from './length-penalty.ts';
import type { Rng } from './rng.ts';
import { anchoredToolPenalty, type ToolUsage } from './tool-penalty.ts';

export interface RewardConfig {
  alphaWin: number;
  alphaLose: number;
  betaLose: number;
  lambdaTool: number;
  lambdaLen: number;
  gate: boolean;
  normalizeStd: boolean;
}

/**
 * Defaults (RECIPE.md gives no numbers). α_win = α_lose = 1 and β_lose = 0 keep pen_tool in [0, 1]
 * like pen_len; λ_tool = λ_len = 0.1 cap pen_eff at 0.2, so a correct and preferred rollout
 * (R >= 0.5 − 0.2) always outranks a wrong one (R <= 0): shaping orders rollouts within a class
 * but never overturns correctness. The gate is on and std normalisation off (RECIPE.md §2, §4).
 */
export const DEFAULT_REWARD_CONFIG: Readonly<RewardConfig> = Object.freeze({
  alphaWin: 1,
  alphaLose: 1,
  betaLose: 0,
  lambdaTool: 0.1,
  lambdaLen: 0.1,
  gate: true,
  normalizeStd: false,
});

export type GroupOutcomes = ToolUsage & LengthOutcomes;

export interface GroupScore {
  toolBaseline: number | null;
  toolPenalty: Float64Array;
  lengthPenalty: Float64Array;
  efficiencyPenalty: Float64Array;
  reward: Float64Array;
  advantage: Float64Array;
  zeroVariance: boolean;
}

/** Score one group (RECIPE.md §4, §2). The RNG is consulted only for b_g. */
export function scoreGroup(outcomes: GroupOutcomes, config: RewardConfig, rng: Rng): GroupScore {
  const tool = anchoredToolPenalty(outcomes, config, rng);
  const length = anchoredLengthPenalty(outcomes);
  const efficiencyPenalty = efficiencyPenalties(
    tool.penalties,
    length.penalties,
    config.lambdaTool,
    config.lambdaLen,
  );
  const reward = compositeRewards(
    outcomes.base,
    outcomes.preference,
    efficiencyPenalty,
    config.gate,
  );
  return {
    toolBaseline: tool.baseline,
    toolPenalty: tool.penalties,
    lengthPenalty: length.penalties,
    efficiencyPenalty,
    reward,
    advantage: groupAdvantages(reward, { normalizeStd: config.normalizeStd }),
    zeroVariance: isZeroVarianceGroup(reward),
  };
}
