// The numbers of the budget-forced evaluation (docs/recipe.md §8), as pure functions: the 95%
// Wilson interval of an accuracy, the knee of a tool-efficiency curve, the cost–accuracy
// frontier, the dollars of one query and the prompt tokens an API bills for a multi-turn answer.
// Kept free of I/O so the worker (which measures) and the control plane and CLI (which report)
// compute the same thing.

/** z of a two-sided 95% normal interval. */
export const Z_95 = 1.959963984540054;

export interface Interval {
  low: number;
  high: number;
}

/**
 * Wilson score interval of `successes` out of `n` (Wilson 1927): unlike the normal
 * approximation it stays inside [0, 1] and is not degenerate at 0% or 100%, which small
 * evaluation sets hit often. Null for n = 0. At k = 0 the lower bound is exactly 0 and at
 * k = n the upper bound exactly 1: there centre ∓ half is 0 (or 1) in exact arithmetic, and
 * its floating-point residue (2.8e-17 at 0/7, 1 − 1.1e-16 at 10/10) is not reported.
 */
export function wilsonInterval(successes: number, n: number, z = Z_95): Interval | null {
  if (!Number.isInteger(n) || n < 0)
    throw new RangeError(`n: must be a non-negative integer, got ${n}`);
  if (!Number.isInteger(successes) || successes < 0 || successes > n)
    throw new RangeError(`successes: must be an integer in [0, ${n}], got ${successes}`);
  if (n === 0) return null;
  const p = successes / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (z / denom) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  const low = successes === 0 ? 0 : Math.max(0, centre - half);
  const high = successes === n ? 1 : Math.min(1, centre + half);
  return { low, high };
}

export interface CurvePoint {
  budget: number;
  /** Fraction in [0, 1]; null when nothing was evaluated at this budget. */
  accuracy: number | null;
}

/**
 * The knee of a tool-efficiency curve: the smallest budget whose accuracy is within `tolerance`
 * (default one percentage point, 0.01) of the best accuracy on the curve. Null when no point
 * has an accuracy.
 */
export function curveKnee(points: readonly CurvePoint[], tolerance = 0.01): number | null {
  const measured = points.filter(
    (p): p is { budget: number; accuracy: number } => p.accuracy !== null,
  );
  if (measured.length === 0) return null;
  const best = Math.max(...measured.map((p) => p.accuracy));
  // A small epsilon so "exactly one point below" counts as within one point despite rounding.
  const within = measured.filter((p) => p.accuracy >= best - tolerance - 1e-12);
  return Math.min(...within.map((p) => p.budget));
}

export interface CostPoint {
  /** USD per query; null when no price is set. */
  cost: number | null;
  accuracy: number | null;
}

/**
 * Indices of the points on the cost–accuracy frontier (Pareto-optimal: no other point is at
 * most as expensive and at least as accurate, and strictly better in one of the two), ordered
 * by cost then index. Points without a cost or an accuracy are left out. Of exact ties the
 * first index is kept.
 */
export function costFrontier(points: readonly CostPoint[]): number[] {
  const measured = points
    .map((p, index) => ({ index, cost: p.cost, accuracy: p.accuracy }))
    .filter(
      (p): p is { index: number; cost: number; accuracy: number } =>
        p.cost !== null && p.accuracy !== null,
    )
    .sort((a, b) => a.cost - b.cost || b.accuracy - a.accuracy || a.index - b.index);
  const frontier: number[] = [];
  let bestAccuracy = -Infinity;
  for (const p of measured) {
    // Sorted by cost (then accuracy descending): a point is on the frontier iff it beats the
    // accuracy of everything at most as expensive.
    if (p.accuracy > bestAccuracy) {
      frontier.push(p.index);
      bestAccuracy = p.accuracy;
    }
  }
  return frontier;
}

/** Operator prices (docs/recipe.md §8.3). */
export interface Prices {
  promptPerMillionTokens: number;
  completionPerMillionTokens: number;
  perToolCall: number;
}

export interface QueryUsage {
  promptTokens: number;
  completionTokens: number;
  toolCalls: number;
}

/** Whether a price table sets any price (all zero: cost is not reported). */
export function hasPrices(prices: Prices): boolean {
  return (
    prices.promptPerMillionTokens > 0 ||
    prices.completionPerMillionTokens > 0 ||
    prices.perToolCall > 0
  );
}

/** USD of one query's usage at `prices`. */
export function queryCost(usage: QueryUsage, prices: Prices): number {
  return (
    (usage.promptTokens * prices.promptPerMillionTokens) / 1e6 +
    (usage.completionTokens * prices.completionPerMillionTokens) / 1e6 +
    usage.toolCalls * prices.perToolCall
  );
}

/** What `pricesFor` reads of an eval spec (protocol's EvalSpec; envs does not depend on it):
 * the spec-level table and each model's own, either possibly partial. */
export interface PricedEvalSpec {
  prices?: Partial<Prices>;
  models?: readonly { prices?: Partial<Prices> }[];
}

const PRICE_FIELDS = [
  'promptPerMillionTokens',
  'completionPerMillionTokens',
  'perToolCall',
] as const;

/**
 * The prices checkpoint `index` of an eval is costed at, field by field: the model's own price
 * (`models[index].prices`), else the spec-level `prices`, else 0 (docs/evaluation.md "Prices
 * per model"). The worker costs cells with it and the results report it, so both agree.
 */
export function pricesFor(spec: PricedEvalSpec, index: number): Prices {
  const own = spec.models?.[index]?.prices;
  const out = {} as Prices;
  for (const field of PRICE_FIELDS) out[field] = own?.[field] ?? spec.prices?.[field] ?? 0;
  return out;
}

/**
 * Prompt tokens an API bills for one multi-turn answer: every sampling request re-sends the
 * whole context so far, so each generated segment (a run of loss-mask 1 after a 0, or the first
 * one after the prompt) costs the tokens before it. No prefix caching is assumed.
 */
export function billedPromptTokens(lossMask: ArrayLike<number>, promptLength: number): number {
  let total = 0;
  for (let i = promptLength; i < lossMask.length; i++) {
    const starts = lossMask[i] === 1 && (i === promptLength || lossMask[i - 1] !== 1);
    if (starts) total += i;
  }
  // An answer that generated nothing still sent its prompt once.
  return total === 0 ? promptLength : total;
}

/**
 * Preference side-by-side (docs/recipe.md §8.1): the reward model's win rate of a candidate's
 * answers over a baseline's on the same questions, mean_i σ(s(x_i, y_i) − s(x_i, y_i^base)).
 * A pointwise Bradley–Terry scorer gives σ(Δ) in one order and 1 − σ(−Δ) = σ(Δ) in the other,
 * so the rate is position-agnostic by construction; a tie counts half. Null for no questions.
 */
export function preferenceWinRate(
  candidate: ArrayLike<number>,
  baseline: ArrayLike<number>,
): number | null {
  if (candidate.length !== baseline.length)
    throw new RangeError(`scores: ${candidate.length} candidate vs ${baseline.length} baseline`);
  if (candidate.length === 0) return null;
  let total = 0;
  for (let i = 0; i < candidate.length; i++) {
    total += 1 / (1 + Math.exp(-(candidate[i]! - baseline[i]!)));
  }
  return total / candidate.length;
}
