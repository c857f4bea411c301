// Step phase 6 (docs/architecture.md "One GRPO step"): trainer forward_backward with the
// importance_sampling loss (sampling logprobs + per-token advantages, see advantages.ts) —
// it returns π_train's logprobs of the sampled tokens — then IS ratios, train–inference KL
// (k1, k3), ratio statistics and J (@anneal/rl stepTokenMath), then optim_step (grad norm:
// null when the backend reports none, never made up).
import type { AdamParams, Datum, LossReduction, TrainerModel } from '@anneal/engines';
import type { Rollout } from '@anneal/envs';
import { stepTokenMath, tokenIsRatios } from '@anneal/rl';
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

export interface TrainInputs {
  /** All rollouts of the step, groups concatenated. */
  rollouts: readonly Rollout[];
  /** Â_i per rollout (docs/recipe.md §2). */
  advantages: ArrayLike<number>;
  is: IsOptions;
  reduction: LossReduction;
  adam: AdamParams;
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

/** π_train logprobs of the generated tokens, flat (datum position t−1 predicts token t). */
export function gatherTrainLogprobs(layout: GeneratedLayout, logprobs: readonly Float32Array[]) {
  const flat = new Float32Array(layout.logpInfer.length);
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
  const logpTrain = gatherTrainLogprobs(layout, probe.logprobs);
  return isCorrection(inputs.is, logpTrain, layout.logpInfer, layout.offsets);
}

/** −J_w = −1/N Σ_i 1/|o_i| Σ_t w_t·Â_i with w_t = r_t·factor_t. */
function weightedLoss(
  layout: GeneratedLayout,
  ratios: ArrayLike<number>,
  factor: Float32Array | null,
  advantages: ArrayLike<number>,
): number {
  const n = layout.offsets.length - 1;
  let objective = 0;
  for (let i = 0; i < n; i++) {
    const start = layout.offsets[i]!;
    const end = layout.offsets[i + 1]!;
    let weightSum = 0;
    for (let t = start; t < end; t++) weightSum += ratios[t]! * (factor?.[t] ?? 1);
    if (end > start) objective += (advantages[i]! * weightSum) / (end - start);
  }
  return n === 0 ? 0 : -objective / n;
}

export async function trainStep(model: TrainerModel, inputs: TrainInputs): Promise<TrainOutcome> {
  const layout = generatedLayout(inputs.rollouts);
  const correction = await correctionFor(model, inputs, layout);
  const factor = correction?.factor ?? null;
  const tokenAdvantages = backendTokenAdvantages(
    inputs.advantages,
    layout.offsets,
    inputs.reduction,
    factor,
  );
  const result = await model.forwardBackward(
    isData(inputs.rollouts, layout, tokenAdvantages),
    'importance_sampling',
  );
  const logpTrain = gatherTrainLogprobs(layout, result.logprobs);
  const math = stepTokenMath(
    {
      logpTrain,
      logpInfer: layout.logpInfer,
      offsets: layout.offsets,
      advantages: inputs.advantages,
    },
    inputs.reduction,
    { tokenAdvantages: new Float32Array(logpTrain.length) },
  );
  const ratios = tokenIsRatios(logpTrain, layout.logpInfer);
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
    loss: weightedLoss(layout, ratios, factor, inputs.advantages),
    gradNorm: optim.gradNorm,
    maskedFraction: correction?.maskedFraction ?? null,
    truncatedFraction: correction?.truncatedFraction ?? null,
  };
}
