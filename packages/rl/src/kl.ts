// Train–inference KL estimators on the sampled tokens (docs/recipe.md §2, "Train–inference KL"):
//   d_t = logp_infer − logp_train   (tokens were drawn from μ_infer)
//   k1 = mean_t d_t,   k3 = mean_t (exp(−d_t) − 1 + d_t)   (k3 >= 0 term by term)
// k3 is reported as `train_inference_kl`. Means run over every token of the batch (flat arrays).
// Over zero tokens both are NaN: there is no estimate, and we do not invent one.
import { assertSameLength } from './ragged.ts';

export interface TrainInferenceKl {
  k1: number;
  k3: number;
  tokens: number;
}

/** k1 and k3 in one pass over the tokens (docs/recipe.md §2). */
export function trainInferenceKl(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
): TrainInferenceKl {
  assertSameLength(logpTrain, logpInfer, 'logpTrain/logpInfer');
  let k1Sum = 0;
  let k3Sum = 0;
  for (let t = 0; t < logpTrain.length; t++) {
    const mismatch = logpInfer[t]! - logpTrain[t]!; // d_t
    k1Sum += mismatch;
    k3Sum += Math.expm1(-mismatch) + mismatch; // exp(−d) − 1 + d; expm1 keeps each term >= 0
  }
  const tokens = logpTrain.length;
  return { k1: k1Sum / tokens, k3: k3Sum / tokens, tokens };
}

/** k1 = mean(d) (docs/recipe.md §2). */
export function klK1(logpTrain: ArrayLike<number>, logpInfer: ArrayLike<number>): number {
  return trainInferenceKl(logpTrain, logpInfer).k1;
}

/** k3 = mean(exp(−d) − 1 + d) (docs/recipe.md §2); reported as `train_inference_kl`. */
export function klK3(logpTrain: ArrayLike<number>, logpInfer: ArrayLike<number>): number {
  return trainInferenceKl(logpTrain, logpInfer).k3;
}
