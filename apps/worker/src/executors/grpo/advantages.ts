// Step phase 5 (docs/recipe.md §2): group advantages Â_i -> per-token advantages for the trainer's
// `importance_sampling` loss, scaled for its declared reduction so that the backend loss is
// L = −J exactly (@anneal/rl tokenAdvantageScale: 'sum' -> Â_i/(N·|o_i|), 'mean_per_sequence'
// -> Â_i/N), N = rollouts in the forward_backward call, |o_i| = generated tokens of rollout i.
//
// The backend's IS loss −r_t·A_t has gradient −r_t·A_t·∇logp_t: the plain token-level J of
// docs/recipe.md §2. The IS options replace the weight r_t of each token by w_t (all from @anneal/rl):
//   truncate (TIS)      w_t = min(r_t, clipMax)
//   mask                w_t = r_t inside [maskLow, maskHigh], else 0 (token dropped)
//   level: sequence     w_t = s_i = exp(mean_t log r_t) (GSPO), truncated/masked per sequence
// The loss cannot express these, so the executor first runs a gradient-free `forward` at the
// same weights to get r_t, then passes A_t·w_t/r_t: the backend's gradient −r_t·A_t·(w_t/r_t)
// is exactly −w_t·A_t·∇logp_t (exact for a deterministic trainer such as the embedded one).
import type { LossReduction } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import type { GrpoSpec } from '@anneal/protocol';
import {
  createStepBuffers,
  maskedIsRatios,
  maskedSequenceIsRatios,
  perTokenAdvantages,
  sequenceIsRatios,
  tokenIsRatios,
  type GroupScore,
  type StepBuffers,
} from '@anneal/rl';

export type IsOptions = GrpoSpec['importanceSampling'];

/** Generated tokens of a batch in the flat layout of @anneal/rl (rollout i owns
 * [offsets[i], offsets[i+1])), with their positions in each rollout's token sequence. The arrays
 * are @anneal/rl's step buffers (createStepBuffers: WebAssembly memory), so the step math streams
 * them in place: `logpInfer` and `offsets` are filled here, `logpTrain` by the gather of the
 * trainer's logprobs, `advantages` (Â_i) by the caller. */
export interface GeneratedLayout extends StepBuffers {
  positions: Int32Array[]; // per rollout: indices t into rollout.tokens with lossMask[t] = 1
}

export function generatedLayout(rollouts: readonly Rollout[]): GeneratedLayout {
  const positions = rollouts.map((r) => {
    const list: number[] = [];
    r.lossMask.forEach((m, t) => {
      if (m === 1) {
        if (t === 0) throw new RangeError('the first token of a rollout cannot be generated');
        list.push(t);
      }
    });
    return Int32Array.from(list);
  });
  const tokens = positions.reduce((n, p) => n + p.length, 0);
  const buffers = createStepBuffers(tokens, rollouts.length);
  const { offsets, logpInfer } = buffers;
  positions.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length));
  rollouts.forEach((r, i) =>
    positions[i]!.forEach((t, k) => (logpInfer[offsets[i]! + k] = r.logprobs[t]!)),
  );
  return { ...buffers, positions };
}

/** Â_i of every rollout, groups concatenated in order. */
export function flatAdvantages(scores: readonly GroupScore[]): Float64Array {
  return Float64Array.from(scores.flatMap((s) => [...s.advantage]));
}

export function needsTrainLogprobs(is: IsOptions): boolean {
  return is.level === 'sequence' || is.truncate || is.mask;
}

export interface IsCorrection {
  /** w_t per generated token (T,): the weight that replaces r_t in J (J_w). */
  weights: Float64Array;
  /** w_t / r_t per generated token (T,). */
  factor: Float32Array;
  /** Tokens (token level) or sequences (sequence level) dropped by masked IS. */
  maskedFraction: number | null;
  /** Share of tokens/sequences whose weight truncated IS clipped. */
  truncatedFraction: number | null;
}

function tokenWeights(is: IsOptions, logpTrain: Float32Array, logpInfer: Float32Array) {
  const ratios = tokenIsRatios(logpTrain, logpInfer);
  const kept = is.mask ? maskedIsRatios(logpTrain, logpInfer, is.maskLow, is.maskHigh).mask : null;
  const weights = new Float64Array(ratios.length);
  let clipped = 0;
  for (let t = 0; t < ratios.length; t++) {
    const isClipped = is.truncate && ratios[t]! > is.clipMax;
    if (isClipped) clipped++;
    weights[t] = kept !== null && kept[t] === 0 ? 0 : isClipped ? is.clipMax : ratios[t]!;
  }
  const dropped =
    kept === null ? null : kept.filter((k) => k === 0).length / Math.max(1, kept.length);
  return { ratios, weights, dropped, clipped: clipped / Math.max(1, ratios.length) };
}

function sequenceWeights(
  is: IsOptions,
  logpTrain: Float32Array,
  logpInfer: Float32Array,
  offsets: Int32Array,
) {
  const ratios = tokenIsRatios(logpTrain, logpInfer);
  const sequence = sequenceIsRatios(logpTrain, logpInfer, offsets);
  const kept = is.mask
    ? maskedSequenceIsRatios(logpTrain, logpInfer, offsets, is.maskLow, is.maskHigh).mask
    : null;
  const weights = new Float64Array(ratios.length);
  let clipped = 0;
  for (let i = 0; i + 1 < offsets.length; i++) {
    const isClipped = is.truncate && sequence[i]! > is.clipMax;
    if (isClipped) clipped++;
    const w = kept !== null && kept[i] === 0 ? 0 : isClipped ? is.clipMax : sequence[i]!;
    weights.fill(w, offsets[i]!, offsets[i + 1]!);
  }
  const n = Math.max(1, offsets.length - 1);
  const dropped = kept === null ? null : kept.filter((k) => k === 0).length / n;
  return { ratios, weights, dropped, clipped: clipped / n };
}

/** w_t/r_t of docs/recipe.md §2's IS options, from the trainer's logprobs at the current weights. */
export function isCorrection(
  is: IsOptions,
  logpTrain: Float32Array,
  logpInfer: Float32Array,
  offsets: Int32Array,
): IsCorrection {
  const { ratios, weights, dropped, clipped } =
    is.level === 'sequence'
      ? sequenceWeights(is, logpTrain, logpInfer, offsets)
      : tokenWeights(is, logpTrain, logpInfer);
  const factor = new Float32Array(ratios.length);
  for (let t = 0; t < ratios.length; t++) {
    // r_t underflowing to 0 carries no gradient whatever its weight
    factor[t] = ratios[t]! > 0 ? weights[t]! / ratios[t]! : 0;
  }
  return {
    weights,
    factor,
    maskedFraction: dropped,
    truncatedFraction: is.truncate ? clipped : null,
  };
}

/** A_t for the backend: Â_i scaled for the reduction, times w_t/r_t when IS options apply. */
export function backendTokenAdvantages(
  advantages: ArrayLike<number>,
  offsets: Int32Array,
  reduction: LossReduction,
  factor: Float32Array | null,
): Float32Array {
  const tokenAdvantages = perTokenAdvantages(advantages, offsets, reduction);
  if (factor !== null) for (let t = 0; t < factor.length; t++) tokenAdvantages[t]! *= factor[t]!;
  return tokenAdvantages;
}
