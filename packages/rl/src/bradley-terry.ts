// Bradley–Terry preference model (docs/recipe.md §5). Δ = s(x, y_a) − s(x, y_b); r = 1 if y_a preferred.
//   ℓ_BT  = −[ r · log σ(Δ) + (1 − r) · log(1 − σ(Δ)) ]
//   L_sym = ½ ℓ_BT(x, y_a, y_b, r) + ½ ℓ_BT(x, y_b, y_a, 1 − r)
//   Δ̄ = ½ [Δ(x, y_a, y_b) − Δ(x, y_b, y_a)],  P̄ = σ(Δ̄)   (position-agnostic)
// log σ is computed stably (no overflow for |Δ| in the hundreds); r may be a soft label in [0, 1].

/** σ(x) without overflow. */
export function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const expX = Math.exp(x);
  return expX / (1 + expX);
}

/** log σ(x) = −softplus(−x), stable for large |x|. */
export function logSigmoid(x: number): number {
  return x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x));
}

/** ℓ_BT for margin Δ and label r (docs/recipe.md §5). log(1 − σ(Δ)) = log σ(−Δ). */
export function btLoss(delta: number, preferA: number): number {
  return -(preferA * logSigmoid(delta) + (1 - preferA) * logSigmoid(-delta));
}

/** ∂ℓ_BT/∂Δ = σ(Δ) − r. */
export function btLossGradient(delta: number, preferA: number): number {
  return sigmoid(delta) - preferA;
}

/**
 * L_sym (docs/recipe.md §5) from the model's margins in both presentation orders: deltaAB = Δ(x, y_a, y_b),
 * deltaBA = Δ(x, y_b, y_a). For a model that scores one response at a time deltaBA = −deltaAB.
 */
export function symmetricBtLoss(deltaAB: number, deltaBA: number, preferA: number): number {
  return 0.5 * btLoss(deltaAB, preferA) + 0.5 * btLoss(deltaBA, 1 - preferA);
}

/** P̄ = σ(½[Δ(x, y_a, y_b) − Δ(x, y_b, y_a)]) (docs/recipe.md §5): probability that y_a beats y_b. */
export function preferenceProbability(deltaAB: number, deltaBA: number): number {
  const symmetricMargin = 0.5 * (deltaAB - deltaBA);
  return sigmoid(symmetricMargin);
}
