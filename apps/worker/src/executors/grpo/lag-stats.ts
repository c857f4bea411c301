// IS statistics of a step split by policy lag (docs/recipe.md §2.6): the mean token ratio
// r_t = exp(logp_train − logp_infer) and k3 = mean(r_t − 1 − log r_t) over the fresh (lag 0) and
// the lagged rollouts separately, read from the step buffers after the trainer's logprobs are
// gathered. μ is the sampling version's own logprobs, so a lagged rollout's ratio covers the
// lag and the train–inference mismatch together. Each k3 term is expm1(log r) − log r, as
// @anneal/rl kl.ts: r − 1 − log r cancels to 0 (or below) once |log r| < ~1e-8, where the
// embedded engines' on-policy mismatch sits. The same pass gives each rollout's own ratio mean,
// min, max and k3 (the rollout ledger's per-rollout numbers, no second pass over the tokens).
import type { LagClass } from '@anneal/protocol';
import type { GeneratedLayout } from './advantages.ts';

export interface LagClassStats {
  ratioMean: number;
  k3: number;
  tokens: number;
}

export type StatsByLag = Record<LagClass, LagClassStats | null>;

/** One rollout's IS ratios over its generated tokens; null for a rollout with none. */
export interface RolloutRatioStats {
  mean: number;
  min: number;
  max: number;
  k3: number;
  tokens: number;
}

export function statsByLag(
  layout: Pick<GeneratedLayout, 'offsets' | 'logpInfer' | 'logpTrain'>,
  lags: readonly number[],
  /** Filled with each rollout's statistics when given. */
  perRollout?: (RolloutRatioStats | null)[],
): StatsByLag {
  const sums = { fresh: { ratio: 0, k3: 0, n: 0 }, lagged: { ratio: 0, k3: 0, n: 0 } };
  lags.forEach((lag, i) => {
    const sum = lag === 0 ? sums.fresh : sums.lagged;
    const start = layout.offsets[i]!;
    const end = layout.offsets[i + 1]!;
    let ratioSum = 0;
    let k3Sum = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let t = start; t < end; t++) {
      const logRatio = layout.logpTrain[t]! - layout.logpInfer[t]!;
      const ratioMinusOne = Math.expm1(logRatio);
      const ratio = ratioMinusOne + 1;
      sum.ratio += ratio;
      sum.k3 += ratioMinusOne - logRatio; // ≥ 0 term by term
      sum.n++;
      if (perRollout === undefined) continue;
      ratioSum += ratio;
      k3Sum += ratioMinusOne - logRatio;
      if (ratio < min) min = ratio;
      if (ratio > max) max = ratio;
    }
    if (perRollout === undefined) return;
    const n = end - start;
    perRollout[i] = n === 0 ? null : { mean: ratioSum / n, min, max, k3: k3Sum / n, tokens: n };
  });
  const of = (s: { ratio: number; k3: number; n: number }): LagClassStats | null =>
    s.n === 0 ? null : { ratioMean: s.ratio / s.n, k3: s.k3 / s.n, tokens: s.n };
  return { fresh: of(sums.fresh), lagged: of(sums.lagged) };
}
