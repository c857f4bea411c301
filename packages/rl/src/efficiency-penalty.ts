// Efficiency penalty (docs/recipe.md §4): pen_eff = λ_tool · pen_tool + λ_len · pen_len.

/** pen_eff of one rollout (docs/recipe.md §4). */
export function efficiencyPenalty(
  toolPenalty: number,
  lengthPenalty: number,
  lambdaTool: number,
  lambdaLen: number,
): number {
  return lambdaTool * toolPenalty + lambdaLen * lengthPenalty;
}

/** pen_eff for a group or batch, element by element. */
export function efficiencyPenalties(
  toolPenalties: ArrayLike<number>,
  lengthPenalties: ArrayLike<number>,
  lambdaTool: number,
  lambdaLen: number,
  out: Float64Array = new Float64Array(toolPenalties.length),
): Float64Array {
  if (toolPenalties.length !== lengthPenalties.length) {
    throw new RangeError(
      `lengthPenalties: ${lengthPenalties.length} values, expected ${toolPenalties.length}`,
    );
  }
  for (let i = 0; i < toolPenalties.length; i++) {
    out[i] = efficiencyPenalty(toolPenalties[i]!, lengthPenalties[i]!, lambdaTool, lambdaLen);
  }
  return out;
}
