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
// Every sampler logprob, trainer logprob and advantage is checked finite (finite-inputs.ts).
import type { AdamParams, Datum, LossReduction, TrainerModel } from '@anneal/engines';
import { samplingLogprobs, type Rollout } from '@anneal/envs';
import {
  isWeights,
  needsIsWeights,
  releaseStepBuffers,
  stepTokenMath,
  weightedObjective,
  type IsWeights,
  type StepTokenStats,
} from '@anneal/rl';
import { shiftedDatum } from '../common/datum.ts';
import {
  backendTokenAdvantages,
  datumScratchFloats,
  forEachRun,
  generatedLayout,
  type GeneratedLayout,
  type IsOptions,
} from './advantages.ts';
import { assertFiniteTokens } from './finite-inputs.ts';
import { statsByLag, type RolloutRatioStats, type StatsByLag } from './lag-stats.ts';

export interface TrainInputs {
  /** The step number, named by errors. */
  step: number;
  /** All rollouts of the step, groups concatenated. */
  rollouts: readonly Rollout[];
  /** Â_i per rollout (docs/recipe.md §2). */
  advantages: ArrayLike<number>;
  is: IsOptions;
  reduction: LossReduction;
  adam: AdamParams;
  /** Policy lag of each rollout (trained version − sampling version); absent: all 0. */
  lags?: readonly number[];
  /** Awaited after forward_backward and before optim_step, while the trainer still holds the
   * weights the step trains: work at those weights that may have started earlier, beside
   * forward_backward (the mismatch probe's forward, step.ts), is done before the update. */
  atTrainedWeights?: () => Promise<void>;
  /** Keep a copy of the trainer's logprobs of the generated tokens (the ledger's `tokens`). */
  keepTrainerLogprobs?: boolean;
}

/** @anneal/rl's step math (k1 = mean(d), k3 = mean(exp(−d) − 1 + d), d = logp_infer −
 * logp_train; ratio statistics; J at the pre-update weights, docs/recipe.md §2) and the rest of
 * the step's training numbers. */
export interface TrainOutcome
  extends StepTokenStats, Pick<IsWeights, 'maskedFraction' | 'truncatedFraction'> {
  /** The optimised loss −J_w (= −J without IS options). */
  loss: number;
  gradNorm: number | null;
  /** Ratio mean and k3 over the fresh and the lagged rollouts (docs/recipe.md "Pipelined GRPO"). */
  byLag: StatsByLag;
  /** Each rollout's own IS ratios (the rollout ledger); null for one with no generated tokens. */
  rolloutRatios: (RolloutRatioStats | null)[];
  /** With keepTrainerLogprobs: the trainer's logprobs of every generated token, rollout i at
   * [offsets[i], offsets[i+1]) (copies: the step buffers are the kernel's). */
  trainerLogprobs: { values: Float32Array; offsets: Int32Array } | null;
}

/** Datums with the sampler's logprobs and per-token advantages on generated positions only, and
 * `weights` = the loss mask (1 on generated tokens, 0 on prompt and tool-output positions). The
 * weights are what a SkyRL backend multiplies each token loss by, and what SkyRL JAX divides a
 * datum's loss by: without them it counts every position (skyrl/tinker/api.py Datum.to_types),
 * docs/engines.md "Reduction". The advantages and weights are views of `layout.scratch`
 * (generatedLayout sized it): the datums are used up once the trainer call they are sent with
 * has returned, before the layout is released, and a second call overwrites the first's. */
export function isData(
  rollouts: readonly Rollout[],
  layout: GeneratedLayout,
  tokenAdvantages: Float32Array,
): Datum[] {
  const { scratch } = layout;
  const needed = datumScratchFloats(rollouts);
  if (needed > scratch.length) {
    throw new RangeError(
      `isData: ${needed} floats of datums, the layout's scratch holds ${scratch.length}`,
    );
  }
  scratch.fill(0, 0, needed);
  let next = 0;
  const view = (length: number) => scratch.subarray(next, (next += length));
  return rollouts.map((r, i) => {
    const advantages = view(r.tokens.length);
    const weights = view(r.tokens.length);
    forEachRun(layout.runs[i]!, layout.offsets[i]!, (from, to, at) => {
      advantages.set(tokenAdvantages.subarray(at, at + (to - from)), from);
      weights.fill(1, from, to);
    });
    return shiftedDatum(r.tokens, {
      weights,
      logprobs: samplingLogprobs(r, 'the importance-sampling datums'),
      advantages,
    });
  });
}

/** π_train logprobs of the generated tokens into layout.logpTrain (datum position t−1 predicts
 * token t): the step buffer the kernel reads in place. */
export function gatherTrainLogprobs(
  layout: GeneratedLayout,
  logprobs: readonly Float32Array[],
): Float32Array {
  const flat = layout.logpTrain;
  layout.runs.forEach((runs, i) => {
    const datum = logprobs[i];
    if (datum === undefined) throw new Error(`trainer returned no logprobs for datum ${i}`);
    forEachRun(runs, layout.offsets[i]!, (from, to, at) => {
      // datum position t − 1 predicts token t
      if (to - 1 > datum.length) {
        throw new Error(
          `trainer returned ${datum.length} logprobs for datum ${i}, whose generated tokens reach position ${to - 1}`,
        );
      }
      flat.set(datum.subarray(from - 1, to - 1), at);
    });
  });
  return flat;
}

/** w_t of the IS options (docs/recipe.md §2.2) from a gradient-free forward at the current
 * weights; null for the plain token-level J. */
async function isWeightsFor(
  model: TrainerModel,
  inputs: TrainInputs,
  layout: GeneratedLayout,
): Promise<IsWeights | null> {
  if (!needsIsWeights(inputs.is)) return null;
  // written into the layout's tokenAdvantages, which forward_backward's advantages replace
  // once this forward has returned
  const plain = backendTokenAdvantages(inputs.advantages, layout, inputs.reduction, null);
  const probe = await model.forward(isData(inputs.rollouts, layout, plain), 'importance_sampling');
  // gathered into the step buffer; forward_backward's logprobs replace them below
  const logpTrain = gatherTrainLogprobs(layout, probe.logprobs);
  assertFiniteTokens(logpTrain, layout, 'trainer logprobs (forward)', inputs.step, 'loss');
  return isWeights(inputs.is, logpTrain, layout.logpInfer, layout.offsets);
}

export async function trainStep(model: TrainerModel, inputs: TrainInputs): Promise<TrainOutcome> {
  if (inputs.advantages.length !== inputs.rollouts.length) {
    throw new RangeError(
      `advantages: ${inputs.advantages.length} values for ${inputs.rollouts.length} rollouts`,
    );
  }
  const layout = generatedLayout(inputs.rollouts);
  try {
    return await trainOn(layout, model, inputs);
  } finally {
    releaseStepBuffers(layout); // the next step's layout reuses the memory
  }
}

/** trainStep over the batch's layout, which nothing it returns refers to. */
async function trainOn(
  layout: GeneratedLayout,
  model: TrainerModel,
  inputs: TrainInputs,
): Promise<TrainOutcome> {
  layout.advantages.set(inputs.advantages);
  assertFiniteTokens(layout.logpInfer, layout, 'logprobs', inputs.step, 'train_inference_kl');
  const weighted = await isWeightsFor(model, inputs, layout);
  const tokenAdvantages = backendTokenAdvantages(
    inputs.advantages,
    layout,
    inputs.reduction,
    weighted?.logFactors ?? null,
  );
  assertFiniteTokens(tokenAdvantages, layout, 'advantages', inputs.step, 'advantage/abs_max');
  const result = await model.forwardBackward(
    isData(inputs.rollouts, layout, tokenAdvantages),
    'importance_sampling',
  );
  gatherTrainLogprobs(layout, result.logprobs);
  assertFiniteTokens(layout.logpTrain, layout, 'trainer logprobs', inputs.step, 'loss');
  const rolloutRatios: (RolloutRatioStats | null)[] = [];
  const byLag = statsByLag(layout, inputs.lags ?? inputs.rollouts.map(() => 0), rolloutRatios);
  const trainerLogprobs = inputs.keepTrainerLogprobs
    ? { values: layout.logpTrain.slice(), offsets: layout.offsets.slice() }
    : null;
  const math = stepTokenMath(layout);
  await inputs.atTrainedWeights?.();
  const optim = await model.optimStep(inputs.adam);
  return {
    ...math,
    // J_w's weights come from the probe forward at the same (pre-update) weights
    loss:
      weighted === null
        ? -math.objective
        : -weightedObjective(layout.offsets, inputs.advantages, weighted.weights),
    gradNorm: optim.gradNorm,
    maskedFraction: weighted?.maskedFraction ?? null,
    truncatedFraction: weighted?.truncatedFraction ?? null,
    byLag,
    rolloutRatios,
    trainerLogprobs,
  };
}
