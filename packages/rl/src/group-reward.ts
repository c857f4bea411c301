// One GRPO group from outcomes to advantages (docs/recipe.md §4 then §2): anchored tool and length
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

// No defaults here: the one source of default values is the GRPO run spec (@anneal/protocol,
// run-spec/grpo.ts `reward.*`, `advantage.normalizeStd`); callers always pass a full config.

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

/** Score one group (docs/recipe.md §4, §2). The RNG is consulted only for b_g. */
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
    outcomes.baseReward,
    outcomes.preferenceScore,
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
