// Step phase 6 (docs/architecture.md "One GRPO step"): trainer forward_backward with the
// importance_sampling loss (sampling logprobs + per-token advantages, see advantages.ts) —
// it returns π_train's logprobs of the sampled tokens — then IS ratios, train–inference KL
// (k1, k3), ratio statistics and J (@anneal/rl stepTokenMath), then optim_step (grad norm:
// null when the backend reports none, never made up).
//
// The step math runs exactly as bench/rl measures it: the batch lives in @anneal/rl's step
// buffers (generatedLayout), the trainer's logprobs are gathered straight into them, and the
// WebAssembly kernel streams them in place. The per-token advantages are computed once, before
// forward_backward (they are its input), by @anneal/rl perTokenAdvantages (backendTokenAdvantages).
import type { AdamParams, Datum, LossReduction, TrainerModel } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import { stepTokenMath } from '@anneal/rl';
import { shiftedDatum } from '../common/datum.ts';
import {
  backendTokenAdvantages,
  generatedLayout,
  isCorrection,
  needsTrainLogprobs,
  type GeneratedLayout,
  type IsCorrection,
  type IsOptions,
} from './advantages.ts';
import { statsByLag, type StatsByLag } from './lag-stats.ts';

export interface TrainInputs {
  /** All rollouts of the step, groups concatenated. */
  rollouts: readonly Rollout[];
  /** Â_i per rollout (docs/recipe.md §2). */
  advantages: ArrayLike<number>;
  is: IsOptions;
  reduction: LossReduction;
  adam: AdamParams;
  /** Policy lag of each rollout (trained version − sampling version); absent: all 0. */
  lags?: readonly number[];
}

export interface TrainOutcome {
  tokens: number;
  /** k1 = mean(d), k3 = mean(exp(−d) − 1 + d), d = logp_infer − logp_train (docs/recipe.md §2). */
  k1: number;
  k3: number;
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  ratioFractionOutside: number;
  /** J of docs/recipe.md §2 at the pre-update weights. */
  objective: number;
  /** The optimised loss −J_w (= −J without IS options). */
  loss: number;
  gradNorm: number | null;
  maskedFraction: number | null;
  truncatedFraction: number | null;
  /** Ratio mean and k3 over the fresh and the lagged rollouts (docs/recipe.md "Pipelined GRPO"). */
  byLag: StatsByLag;
}

/** Datums with the sampler's logprobs and per-token advantages on generated positions only. */
export function isData(
  rollouts: readonly Rollout[],
  layout: GeneratedLayout,
  tokenAdvantages: Float32Array,
): Datum[] {
  return rollouts.map((r, i) => {
    const advantages = new Float32Array(r.tokens.length);
    const start = layout.offsets[i]!;
    layout.positions[i]!.forEach((t, k) => (advantages[t] = tokenAdvantages[start + k]!));
    return shiftedDatum(r.tokens, { logprobs: r.logprobs, advantages });
  });
}

/** π_train logprobs of the generated tokens into layout.logpTrain (datum position t−1 predicts
 * token t): the step buffer the kernel reads in place. */
export function gatherTrainLogprobs(
  layout: GeneratedLayout,
  logprobs: readonly Float32Array[],
): Float32Array {
  const flat = layout.logpTrain;
  layout.positions.forEach((positions, i) => {
    const datum = logprobs[i];
    if (datum === undefined) throw new Error(`trainer returned no logprobs for datum ${i}`);
    const start = layout.offsets[i]!;
    positions.forEach((t, k) => (flat[start + k] = datum[t - 1]!));
  });
  return flat;
}

async function correctionFor(
  model: TrainerModel,
  inputs: TrainInputs,
  layout: GeneratedLayout,
): Promise<IsCorrection | null> {
  if (!needsTrainLogprobs(inputs.is)) return null;
  const plain = backendTokenAdvantages(inputs.advantages, layout.offsets, inputs.reduction, null);
  const probe = await model.forward(isData(inputs.rollouts, layout, plain), 'importance_sampling');
  // gathered into the step buffer; forward_backward's logprobs replace them below
  const logpTrain = gatherTrainLogprobs(layout, probe.logprobs);
  return isCorrection(inputs.is, logpTrain, layout.logpInfer, layout.offsets);
}

/** J_w = 1/N Σ_i Â_i · mean_t w_t: J with the IS options' weights w_t in place of r_t. */
function weightedObjective(layout: GeneratedLayout, weights: Float64Array): number {
  const n = layout.offsets.length - 1;
  let objective = 0;
  for (let i = 0; i < n; i++) {
    const start = layout.offsets[i]!;
    const end = layout.offsets[i + 1]!;
    let weightSum = 0;
    for (let t = start; t < end; t++) weightSum += weights[t]!;
    if (end > start) objective += (layout.advantages[i]! * weightSum) / (end - start);
  }
  return n === 0 ? 0 : objective / n;
}

export async function trainStep(model: TrainerModel, inputs: TrainInputs): Promise<TrainOutcome> {
  const layout = generatedLayout(inputs.rollouts);
  if (inputs.advantages.length !== inputs.rollouts.length) {
    throw new RangeError(
      `advantages: ${inputs.advantages.length} values for ${inputs.rollouts.length} rollouts`,
    );
  }
  layout.advantages.set(inputs.advantages);
  const correction = await correctionFor(model, inputs, layout);
  const tokenAdvantages = backendTokenAdvantages(
    inputs.advantages,
    layout.offsets,
    inputs.reduction,
    correction?.factor ?? null,
  );
  const result = await model.forwardBackward(
    isData(inputs.rollouts, layout, tokenAdvantages),
    'importance_sampling',
  );
  gatherTrainLogprobs(layout, result.logprobs);
  const byLag = statsByLag(layout, inputs.lags ?? inputs.rollouts.map(() => 0));
  const math = stepTokenMath(layout);
  const optim = await model.optimStep(inputs.adam);
  return {
    tokens: math.tokens,
    k1: math.k1,
    k3: math.k3,
    ratioMean: math.ratioMean,
    ratioMin: math.ratioMin,
    ratioMax: math.ratioMax,
    ratioFractionOutside: math.ratioFractionOutside,
    objective: math.objective,
    // J_w's weights come from the probe forward at the same (pre-update) weights
    loss: correction === null ? -math.objective : -weightedObjective(layout, correction.weights),
    gradNorm: optim.gradNorm,
    maskedFraction: correction?.maskedFraction ?? null,
    truncatedFraction: correction?.truncatedFraction ?? null,
    byLag,
  };
}
