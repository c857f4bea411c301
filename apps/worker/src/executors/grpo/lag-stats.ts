// IS statistics of a step split by policy lag (docs/recipe.md §2.6): the mean token ratio
// r_t = exp(logp_train − logp_infer) and k3 = mean(r_t − 1 − log r_t) over the fresh (lag 0) and
// the lagged rollouts separately, read from the step buffers after the trainer's logprobs are
// gathered. μ is the sampling version's own logprobs, so a lagged rollout's ratio covers the
// lag and the train–inference mismatch together. Each k3 term is expm1(log r) − log r, as
// @anneal/rl kl.ts: r − 1 − log r cancels to 0 (or below) once |log r| < ~1e-8, where the
// embedded engines' on-policy mismatch sits.
import type { LagClass } from '@anneal/telemetry';
import type { GeneratedLayout } from './advantages.ts';

export interface LagClassStats {
  ratioMean: number;
  k3: number;
  tokens: number;
}

export type StatsByLag = Record<LagClass, LagClassStats | null>;

export function statsByLag(
  layout: Pick<GeneratedLayout, 'offsets' | 'logpInfer' | 'logpTrain'>,
  lags: readonly number[],
): StatsByLag {
  const sums = { fresh: { ratio: 0, k3: 0, n: 0 }, lagged: { ratio: 0, k3: 0, n: 0 } };
  lags.forEach((lag, i) => {
    const sum = lag === 0 ? sums.fresh : sums.lagged;
    for (let t = layout.offsets[i]!; t < layout.offsets[i + 1]!; t++) {
      const logRatio = layout.logpTrain[t]! - layout.logpInfer[t]!;
      const ratioMinusOne = Math.expm1(logRatio);
      sum.ratio += ratioMinusOne + 1;
      sum.k3 += ratioMinusOne - logRatio; // ≥ 0 term by term
      sum.n++;
    }
  });
  const of = (s: { ratio: number; k3: number; n: number }): LagClassStats | null =>
    s.n === 0 ? null : { ratioMean: s.ratio / s.n, k3: s.k3 / s.n, tokens: s.n };
  return { fresh: of(sums.fresh), lagged: of(sums.lagged) };
}
