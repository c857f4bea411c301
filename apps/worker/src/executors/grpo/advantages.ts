// Step phase 5 (docs/recipe.md §2): group advantages Â_i -> per-token advantages for the trainer's
// `importance_sampling` loss, scaled for its declared reduction so that the backend loss is
// L = −J exactly (@anneal/rl tokenAdvantageScale: 'sum' -> Â_i/(N·|o_i|), 'mean_per_sequence'
// -> Â_i, the backend dividing by |o_i| and N), N = rollouts of the step, |o_i| = generated tokens.
//
// The backend's IS loss −r_t·A_t has gradient −r_t·A_t·∇logp_t: the plain token-level J of
// docs/recipe.md §2.1. The IS options of §2.2 replace r_t by a weight w_t (@anneal/rl
// isWeights: truncated, masked, sequence level). The loss cannot express these, so the executor
// first runs a gradient-free `forward` at the same weights to get r_t, then passes
// A_t·w_t/r_t: the backend's gradient −r_t·A_t·(w_t/r_t) is exactly −w_t·A_t·∇logp_t (exact for
// a deterministic trainer such as the embedded one). w_t/r_t is formed from its log in float64
// (@anneal/rl weightedTokenAdvantages), never stored on its own.
import type { LossReduction } from '@anneal/engines';
import { samplingLogprobs, type Rollout } from '@anneal/envs';
import type { GrpoSpec } from '@anneal/protocol';
import {
  createStepBuffers,
  perTokenAdvantages,
  weightedTokenAdvantages,
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
  // Counted first, then written straight into an Int32Array of that length (growing a JS array
  // per rollout and copying it was most of this function's allocation at 4,096 tokens a rollout).
  const positions = rollouts.map((r) => {
    const mask = r.lossMask;
    let count = 0;
    for (let t = 0; t < mask.length; t += 1) if (mask[t] === 1) count += 1;
    if (mask[0] === 1) {
      throw new RangeError('the first token of a rollout cannot be generated');
    }
    const list = new Int32Array(count);
    let k = 0;
    for (let t = 0; t < mask.length; t += 1) if (mask[t] === 1) list[k++] = t;
    return list;
  });
  const tokens = positions.reduce((n, p) => n + p.length, 0);
  const buffers = createStepBuffers(tokens, rollouts.length);
  const { offsets, logpInfer } = buffers;
  positions.forEach((p, i) => (offsets[i + 1] = offsets[i]! + p.length));
  rollouts.forEach((r, i) => {
    const logprobs = samplingLogprobs(r, 'the step layout');
    const at = positions[i]!;
    const start = offsets[i]!;
    for (let k = 0; k < at.length; k += 1) logpInfer[start + k] = logprobs[at[k]!]!;
  });
  return { ...buffers, positions };
}

/** Â_i of every rollout, groups concatenated in order. */
export function flatAdvantages(scores: readonly GroupScore[]): Float64Array {
  return Float64Array.from(scores.flatMap((s) => [...s.advantage]));
}

/** A_t for the backend: Â_i scaled for the reduction, times w_t/r_t (as its log, @anneal/rl
 * IsWeights.logFactors) when IS options apply. */
export function backendTokenAdvantages(
  advantages: ArrayLike<number>,
  offsets: Int32Array,
  reduction: LossReduction,
  logFactors: Float64Array | null,
): Float32Array {
  return logFactors === null
    ? perTokenAdvantages(advantages, offsets, reduction)
    : weightedTokenAdvantages(advantages, offsets, reduction, logFactors);
}
