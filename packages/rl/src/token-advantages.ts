// Per-token advantages that make a trainer backend optimise docs/recipe.md §2's J exactly, whatever its
// loss reduction (docs/engines.md "Reduction"). The `importance_sampling` loss of token t of datum i
// is ℓ_{i,t} = −w_{i,t} · r_{i,t} · A_{i,t}, with w the `weights` Anneal sends on every datum: the
// loss mask (1 on the generated tokens o_i, 0 on prompt and tool-output positions). Backends reduce:
//   'sum'               L = Σ_i Σ_t ℓ_{i,t}             (Tinker, SkyRL-FSDP, the embedded trainer)
//                       → A_{i,t} = Â_i / (N · |o_i|)
//   'mean_per_sequence' L = 1/D Σ_i Σ_t ℓ_{i,t} / Σ_t w_{i,t}   (SkyRL-JAX: each datum over the sum
//                       of its weights, = |o_i| for the mask; gradients averaged over the D datums
//                       accumulated before optim_step, D = N)
//                       → A_{i,t} = Â_i
// Either way L = −J and ∂L/∂logp_train = −∂J/∂logp_train, N = sequences of the step (all its
// forward_backward calls). Same names as LossReduction in @anneal/engines (not imported: @anneal/rl
// depends on nothing).
import { assertOffsets, rolloutCount } from './ragged.ts';

export type LossReduction = 'sum' | 'mean_per_sequence';

/** Weight of Â_i in each of its tokens' advantages for a backend's reduction, given datums whose
 * `weights` are the loss mask. */
export function tokenAdvantageScale(
  reduction: LossReduction,
  sequenceCount: number,
  tokens: number,
): number {
  if (tokens === 0 || sequenceCount === 0) return 0;
  switch (reduction) {
    case 'sum':
      return 1 / (sequenceCount * tokens);
    case 'mean_per_sequence':
      return 1; // the backend divides by |o_i| (the weights) and by N (the datums) itself
    default:
      throw new RangeError(`reduction: unknown '${String(reduction)}'`);
  }
}

/** A_{i,t} for every token of the batch, flat (T,), written into `out`. */
export function perTokenAdvantages(
  advantages: ArrayLike<number>,
  offsets: Int32Array,
  reduction: LossReduction,
  out: Float32Array = new Float32Array(offsets[offsets.length - 1] ?? 0),
): Float32Array {
  const sequenceCount = rolloutCount(offsets);
  assertOffsets(offsets, out.length);
  if (advantages.length !== sequenceCount) {
    throw new RangeError(`advantages: ${advantages.length} values for ${sequenceCount} rollouts`);
  }
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    const scale = tokenAdvantageScale(reduction, sequenceCount, end - start);
    out.fill(advantages[i]! * scale, start, end);
  }
  return out;
}

/**
 * A_{i,t} · w_t / r_t for every token (docs/recipe.md §2.2, §2.5): the advantages whose IS loss
 * −r_t·A has the gradient of J_w, −w_t·A_{i,t}·∇logp. `logFactors` holds log(w_t / r_t)
 * (is-weights.ts); the product is formed in float64 from the log and rounded to float32 once,
 * so it is finite wherever the result fits float32, and 0 where A_{i,t} = 0 or the token is
 * dropped. Where it does not fit, the value is ±Infinity for the caller to refuse.
 */
export function weightedTokenAdvantages(
  advantages: ArrayLike<number>,
  offsets: Int32Array,
  reduction: LossReduction,
  logFactors: ArrayLike<number>,
  out: Float32Array = new Float32Array(logFactors.length),
): Float32Array {
  perTokenAdvantages(advantages, offsets, reduction, out);
  if (logFactors.length !== out.length) {
    throw new RangeError(`logFactors: ${logFactors.length} values for ${out.length} tokens`);
  }
  const sequenceCount = rolloutCount(offsets);
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    const scaled = advantages[i]! * tokenAdvantageScale(reduction, sequenceCount, end - start);
    for (let t = start; t < end; t++) {
      const logFactor = logFactors[t]!;
      const dropped = logFactor === -Infinity;
      out[t] = scaled === 0 || dropped ? 0 : scaled * Math.exp(logFactor);
    }
  }
  return out;
}
