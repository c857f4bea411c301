// Sequence-level IS ratios (docs/recipe.md §2, GSPO-style option): the geometric mean of a rollout's
// token ratios, exp(mean_t (logp_train − logp_infer)). A rollout with no tokens has ratio 1 (no
// evidence of mismatch). Masked variant: sequences whose ratio leaves [low, high] are dropped.
import { assertOffsets, assertSameLength, rolloutCount } from './ragged.ts';

/** One ratio per rollout over the flat layout (offsets: (N + 1,)). */
export function sequenceIsRatios(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  offsets: Int32Array,
  out: Float64Array = new Float64Array(rolloutCount(offsets)),
): Float64Array {
  assertSameLength(logpTrain, logpInfer, 'logpTrain/logpInfer');
  assertOffsets(offsets, logpTrain.length);
  for (let i = 0; i + 1 < offsets.length; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    let logRatioSum = 0;
    for (let t = start; t < end; t++) logRatioSum += logpTrain[t]! - logpInfer[t]!;
    const meanLogRatio = end > start ? logRatioSum / (end - start) : 0;
    out[i] = Math.exp(meanLogRatio);
  }
  return out;
}

/** Sequence-level masked IS: ratio 0 and mask 0 for sequences outside [low, high]. */
export function maskedSequenceIsRatios(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  offsets: Int32Array,
  low: number,
  high: number,
): { ratios: Float64Array; mask: Uint8Array; droppedSequences: number } {
  if (!(low >= 0 && high >= low))
    throw new RangeError(`mask bounds: need 0 <= low <= high, got [${low}, ${high}]`);
  const ratios = sequenceIsRatios(logpTrain, logpInfer, offsets);
  const mask = new Uint8Array(ratios.length);
  let droppedSequences = 0;
  for (let i = 0; i < ratios.length; i++) {
    const isKept = ratios[i]! >= low && ratios[i]! <= high;
    mask[i] = isKept ? 1 : 0;
    if (!isKept) {
      ratios[i] = 0;
      droppedSequences++;
    }
  }
  return { ratios, mask, droppedSequences };
}
