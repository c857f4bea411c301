// The GRPO objective with token-level IS (docs/recipe.md §2):
//   J(θ) = 1/G · Σ_i 1/|o_i| · Σ_t r_{i,t}(θ) · Â_i,   r_{i,t} = exp(logp_train − logp_infer)
// and its gradient with respect to the train logprobs (∂r/∂logp_train = r):
//   ∂J/∂logp_train_{i,t} = r_{i,t} · Â_i / (G · |o_i|).
// Over a batch of several groups G is the number of sequences in the batch, which makes J the
// mean of the groups' objectives when groups have equal size. A rollout with no tokens adds 0.
import { assertOffsets, assertSameLength, rolloutCount } from './ragged.ts';

export interface GrpoBatch {
  /** π_train logprob of each sampled token, flat (T,). */
  logpTrain: ArrayLike<number>;
  /** μ_infer logprob of each sampled token, flat (T,). */
  logpInfer: ArrayLike<number>;
  /** CSR offsets (N + 1,). */
  offsets: Int32Array;
  /** Â_i per rollout (N,). */
  advantages: ArrayLike<number>;
}

function checkBatch(batch: GrpoBatch): number {
  assertSameLength(batch.logpTrain, batch.logpInfer, 'logpTrain/logpInfer');
  assertOffsets(batch.offsets, batch.logpTrain.length);
  const sequenceCount = rolloutCount(batch.offsets);
  if (batch.advantages.length !== sequenceCount) {
    throw new RangeError(
      `advantages: ${batch.advantages.length} values for ${sequenceCount} rollouts`,
    );
  }
  return sequenceCount;
}

/** J of docs/recipe.md §2 over the batch. */
export function grpoObjective(batch: GrpoBatch): number {
  const sequenceCount = checkBatch(batch);
  const { logpTrain, logpInfer, offsets, advantages } = batch;
  let objectiveSum = 0;
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    if (end === start) continue;
    let ratioSum = 0;
    for (let t = start; t < end; t++) ratioSum += Math.exp(logpTrain[t]! - logpInfer[t]!);
    objectiveSum += (ratioSum / (end - start)) * advantages[i]!;
  }
  return sequenceCount === 0 ? 0 : objectiveSum / sequenceCount;
}

/** ∂J/∂logp_train per token (docs/recipe.md §2), flat (T,). */
export function grpoObjectiveGradient(
  batch: GrpoBatch,
  out: Float64Array = new Float64Array(batch.logpTrain.length),
): Float64Array {
  const sequenceCount = checkBatch(batch);
  const { logpTrain, logpInfer, offsets, advantages } = batch;
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    const weight = advantages[i]! / (sequenceCount * (end - start));
    for (let t = start; t < end; t++) {
      const ratio = Math.exp(logpTrain[t]! - logpInfer[t]!);
      out[t] = ratio * weight;
    }
  }
  return out;
}
