// Token-level importance-sampling ratios (docs/recipe.md §2):
//   r_{i,t} = π_train(o_{i,t}) / μ_infer(o_{i,t}) = exp(logp_train − logp_infer).
// Plus the options docs/recipe.md §2 lists: truncated IS ("TIS", clip at clipMax, default 2.0 when
// enabled) and masked IS (drop tokens whose ratio leaves [low, high]). All work token by token,
// so they take the flat per-token arrays of a whole batch directly.
import { assertSameLength } from './ragged.ts';

/** Default clip for truncated IS when enabled (docs/recipe.md §2). */
export const DEFAULT_TIS_CLIP_MAX = 2.0;

/** r = exp(logp_train − logp_infer) per token (docs/recipe.md §2, default `level: token`). */
export function tokenIsRatios(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  out: Float32Array | Float64Array = new Float64Array(logpTrain.length),
): Float32Array | Float64Array {
  assertSameLength(logpTrain, logpInfer, 'logpTrain/logpInfer');
  for (let t = 0; t < logpTrain.length; t++) {
    const logRatio = logpTrain[t]! - logpInfer[t]!;
    out[t] = Math.exp(logRatio);
  }
  return out;
}

/** Truncated IS: min(r, clipMax) per token (docs/recipe.md §2, "TIS"). */
export function truncatedIsRatios(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  clipMax: number = DEFAULT_TIS_CLIP_MAX,
  out: Float32Array | Float64Array = new Float64Array(logpTrain.length),
): Float32Array | Float64Array {
  if (!(clipMax > 0)) throw new RangeError(`clipMax: must be > 0, got ${clipMax}`);
  tokenIsRatios(logpTrain, logpInfer, out);
  for (let t = 0; t < out.length; t++) {
    if (out[t]! > clipMax) out[t] = clipMax;
  }
  return out;
}

/**
 * Masked IS (docs/recipe.md §2): tokens whose ratio leaves [low, high] are dropped — their ratio is set
 * to 0 and mask[t] = 0; kept tokens have mask[t] = 1 and their plain ratio.
 */
export function maskedIsRatios(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  low: number,
  high: number,
): { ratios: Float64Array; mask: Uint8Array; droppedTokens: number } {
  if (!(low >= 0 && high >= low))
    throw new RangeError(`mask bounds: need 0 <= low <= high, got [${low}, ${high}]`);
  const ratios = new Float64Array(logpTrain.length);
  tokenIsRatios(logpTrain, logpInfer, ratios);
  const mask = new Uint8Array(ratios.length);
  let droppedTokens = 0;
  for (let t = 0; t < ratios.length; t++) {
    const isKept = ratios[t]! >= low && ratios[t]! <= high;
    mask[t] = isKept ? 1 : 0;
    if (!isKept) {
      ratios[t] = 0;
      droppedTokens++;
    }
  }
  return { ratios, mask, droppedTokens };
}
