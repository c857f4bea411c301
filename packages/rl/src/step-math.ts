// The per-step token math of docs/recipe.md §2 fused into one pass over a batch in the flat layout
// (ragged.ts): IS ratios, train–inference KL (k1, k3), ratio statistics and the objective J, from
// the trainer's logprobs once forward_backward has returned them. (The per-token advantages sent
// with that call are token-advantages.ts's, computed before it.) No allocation per rollout or
// token. This scalar version is the reference; the worker runs stepTokenMath (step-math-wasm.ts)
// in place on createStepBuffers arrays, which is what bench/rl measures.
// Accumulation: per rollout, Σ_t r and Σ_t logRatio; then Σ_t (r − 1 − logRatio) of rollout i is
// Σ r − |o_i| − Σ logRatio (kl.ts's k3 summed in a different order), clamped at 0 overall.
import { assertOffsets, assertSameLength, rolloutCount } from './ragged.ts';
import { RATIO_BAND_HIGH, RATIO_BAND_LOW } from './ratio-stats.ts';

export interface StepBatch {
  logpTrain: Float32Array; // (T,)
  logpInfer: Float32Array; // (T,)
  offsets: Int32Array; // (N + 1,)
  advantages: ArrayLike<number>; // Â_i (N,)
}

/** One batch's token-level statistics (the worker turns them into step-record keys). */
export interface StepTokenStats {
  tokens: number;
  k1: number;
  k3: number;
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  ratioFractionOutside: number;
  objective: number;
}

export interface RolloutSums {
  ratioSum: number;
  logRatioSum: number;
  min: number;
  max: number;
  outside: number;
}

/** One rollout's tokens [start, end): Σ r, Σ logRatio, min/max r, count outside [0.5, 2]. */
export function scanRollout(batch: StepBatch, start: number, end: number, sums: RolloutSums): void {
  const { logpTrain, logpInfer } = batch;
  let ratioSum = 0;
  let logRatioSum = 0;
  let min = sums.min;
  let max = sums.max;
  let outside = 0;
  for (let t = start; t < end; t++) {
    const logRatio = logpTrain[t]! - logpInfer[t]!;
    const ratio = Math.exp(logRatio);
    ratioSum += ratio;
    logRatioSum += logRatio;
    if (ratio < min) min = ratio;
    if (ratio > max) max = ratio;
    if (ratio < RATIO_BAND_LOW || ratio > RATIO_BAND_HIGH) outside++;
  }
  sums.ratioSum = ratioSum;
  sums.logRatioSum = logRatioSum;
  sums.min = min;
  sums.max = max;
  sums.outside += outside;
}

/** Validate a step's arrays against each other; returns the rollout count N. */
export function checkStepInputs(batch: StepBatch): number {
  const { offsets, advantages, logpTrain } = batch;
  assertSameLength(logpTrain, batch.logpInfer, 'logpTrain/logpInfer');
  assertOffsets(offsets, logpTrain.length);
  const sequenceCount = rolloutCount(offsets);
  if (advantages.length !== sequenceCount)
    throw new RangeError(`advantages: ${advantages.length} values for ${sequenceCount} rollouts`);
  return sequenceCount;
}

/**
 * docs/recipe.md §2 step math over a whole batch in one pass, in scalar JavaScript (float64); see the
 * file comment. The reference for the WebAssembly path (step-math-wasm.ts), which `stepTokenMath`
 * uses where WebAssembly SIMD is available.
 */
export function stepTokenMathScalar(batch: StepBatch): StepTokenStats {
  const { offsets, advantages, logpTrain } = batch;
  const sequenceCount = checkStepInputs(batch);
  const sums: RolloutSums = {
    ratioSum: 0,
    logRatioSum: 0,
    min: Infinity,
    max: -Infinity,
    outside: 0,
  };
  let ratioTotal = 0;
  let logRatioTotal = 0;
  let mismatchKlSum = 0; // Σ_t (r − 1 − logRatio), summed per rollout to keep the cancellation small
  let objectiveSum = 0;
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    scanRollout(batch, start, end, sums);
    ratioTotal += sums.ratioSum;
    logRatioTotal += sums.logRatioSum;
    mismatchKlSum += sums.ratioSum - (end - start) - sums.logRatioSum;
    if (end > start) objectiveSum += (advantages[i]! * sums.ratioSum) / (end - start);
  }
  const tokens = logpTrain.length;
  const mismatchKl = Math.max(0, mismatchKlSum / tokens); // k3
  return {
    tokens,
    k1: -logRatioTotal / tokens, // mean d, d = logp_infer − logp_train
    k3: tokens === 0 ? NaN : mismatchKl,
    ratioMean: ratioTotal / tokens,
    ratioMin: tokens === 0 ? NaN : sums.min,
    ratioMax: tokens === 0 ? NaN : sums.max,
    ratioFractionOutside: sums.outside / tokens,
    objective: sequenceCount === 0 ? 0 : objectiveSum / sequenceCount,
  };
}
