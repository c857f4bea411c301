// Composite reward with gated aggregation (docs/recipe.md §4):
//   R(τ_i) = r_base(τ_i) · s(τ_i) − pen_eff(τ_i)          (gate: true, the default)
// Correctness gates preference credit. With gate: false Anneal uses the linear sum the article
// argues against, R = r_base + s − pen_eff, so the two can be compared.

/** R of one rollout (docs/recipe.md §4). */
export function compositeReward(
  base: number,
  preference: number,
  efficiencyPenalty: number,
  gate = true,
): number {
  const preferenceCredit = gate ? base * preference : base + preference;
  return preferenceCredit - efficiencyPenalty;
}

/** R for every rollout of a group or batch (docs/recipe.md §4). */
export function compositeRewards(
  base: ArrayLike<number>,
  preference: ArrayLike<number>,
  efficiencyPenalties: ArrayLike<number>,
  gate = true,
  out: Float64Array = new Float64Array(base.length),
): Float64Array {
  if (preference.length !== base.length || efficiencyPenalties.length !== base.length) {
    throw new RangeError(
      'compositeRewards: base, preference and efficiencyPenalties differ in length',
    );
  }
  for (let i = 0; i < base.length; i++) {
    out[i] = compositeReward(base[i]!, preference[i]!, efficiencyPenalties[i]!, gate);
  }
  return out;
}
