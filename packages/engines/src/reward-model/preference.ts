// Position-agnostic preference probability of docs/recipe.md §5.
//   Δ(x, y_a, y_b) = s(x, y_a) − s(x, y_b);  Δ̄ = ½[Δ(x, y_a, y_b) − Δ(x, y_b, y_a)];  P̄ = σ(Δ̄)
// For a pointwise scorer Δ(x, y_b, y_a) = −Δ(x, y_a, y_b), so P̄ = σ(s_a − s_b).

/** P̄ that response a beats response b, from their pointwise scores. */
export function preferenceProbability(scoreA: number, scoreB: number): number {
  const forward = scoreA - scoreB; // Δ(x, y_a, y_b)
  const swapped = scoreB - scoreA; // Δ(x, y_b, y_a)
  const symmetric = 0.5 * (forward - swapped); // Δ̄
  return 1 / (1 + Math.exp(-symmetric));
}
