// Composite reward with gated aggregation (docs/recipe.md §4):
//   R(τ_i) = r_base(τ_i) · s(τ_i) − pen_eff(τ_i)          (gate: true, the default)
// Correctness gates preference credit. With gate: false Anneal uses the linear sum the article
// argues against, R = r_base + s − pen_eff, so the two can be compared.

/** R of one rollout (docs/recipe.md §4). */
export function compositeReward(
  baseReward: number,
  preferenceScore: number,
  efficiencyPenalty: number,
  gate = true,
): number {
  const preferenceCredit = gate ? baseReward * preferenceScore : baseReward + preferenceScore;
  return preferenceCredit - efficiencyPenalty;
}

/** R for every rollout of a group or batch (docs/recipe.md §4). */
export function compositeRewards(
  baseReward: ArrayLike<number>,
  preferenceScore: ArrayLike<number>,
  efficiencyPenalties: ArrayLike<number>,
  gate = true,
  out: Float64Array = new Float64Array(baseReward.length),
): Float64Array {
  if (
    preferenceScore.length !== baseReward.length ||
    efficiencyPenalties.length !== baseReward.length
  ) {
    throw new RangeError(
      'compositeRewards: baseReward, preferenceScore and efficiencyPenalties differ in length',
    );
  }
  for (let i = 0; i < baseReward.length; i++) {
    out[i] = compositeReward(baseReward[i]!, preferenceScore[i]!, efficiencyPenalties[i]!, gate);
  }
  return out;
}
