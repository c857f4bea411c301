// Loss functions of the embedded trainer (docs/engines.md "Losses", summed like Tinker) and the
// symmetric Bradley–Terry loss of docs/recipe.md §5. Each returns the loss and its derivative with
// respect to what the model produced (token logprobs or scores); model.ts takes it from there.
import type { Datum, LossFn, LossFnConfig, Tensor } from '../types.ts';

/** Tinker's PPO defaults: ratio clipped to [0.8, 1.2]. */
export const PPO_CLIP_LOW = 0.8;
export const PPO_CLIP_HIGH = 1.2;

export interface TokenLoss {
  /** Per-position loss (T). */
  elementwise: Float64Array;
  /** dLoss/dlogπ(target) per position (T). */
  dLogp: Float64Array;
  lossSum: number;
}

/** A datum checked against the loss it is used with: every input aligned with modelInput. */
export interface CheckedDatum {
  tokens: Int32Array;
  targets: Int32Array | null;
  weights: Float32Array | null;
  samplingLogprobs: Float32Array | null;
  advantages: Float32Array | null;
  /** Bradley–Terry: r = 1 if this response is preferred over the next datum's (pairs a, b).
   * On the wire `label` is aligned with model_input like every loss input, each value r. */
  label: number | null;
}

const REQUIRED: Record<LossFn, readonly string[]> = {
  cross_entropy: ['target_tokens', 'weights'],
  importance_sampling: ['target_tokens', 'logprobs', 'advantages'],
  ppo: ['target_tokens', 'logprobs', 'advantages'],
  bradley_terry: [],
};

export function checkDatum(datum: Datum, index: number, lossFn: LossFn): CheckedDatum {
  const where = `data[${index}]`;
  const T = datum.modelInput.length;
  if (T === 0) throw new RangeError(`${where}.model_input: must contain at least one token`);
  const inputs = datum.lossFnInputs;
  for (const name of REQUIRED[lossFn]) {
    if (!inputs[name])
      throw new RangeError(`${where}.loss_fn_inputs.${name}: required by ${lossFn}`);
  }
  const aligned = (name: string): Tensor | null => {
    const tensor = inputs[name];
    if (!tensor) return null;
    if (tensor.length !== T) {
      throw new RangeError(
        `${where}.loss_fn_inputs.${name}: expected ${T} values (one per model_input token), got ${tensor.length}`,
      );
    }
    return tensor;
  };
  const asInt = (name: string, t: Tensor | null): Int32Array | null => {
    if (!t) return null;
    const out = Int32Array.from(t);
    if (out.some((v, i) => v !== t[i])) {
      throw new RangeError(`${where}.loss_fn_inputs.${name}: token ids must be integers`);
    }
    return out;
  };
  const asFloat = (name: string, t: Tensor | null): Float32Array | null => {
    if (!t) return null;
    const out = t instanceof Float32Array ? t : Float32Array.from(t);
    // a NaN or infinite weight, logprob or advantage would make a NaN update (docs/engines.md "Losses")
    const bad = out.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) {
      throw new RangeError(
        `${where}.loss_fn_inputs.${name}[${bad}]: must be finite, got ${out[bad]}`,
      );
    }
    return out;
  };
  let label: number | null = null;
  const labels = lossFn === 'bradley_terry' ? aligned('label') : null;
  if (labels) {
    label = labels[labels.length - 1]!;
    if (!(label >= 0 && label <= 1) || labels.some((v) => v !== label)) {
      throw new RangeError(
        `${where}.loss_fn_inputs.label: every value must be the same r in [0, 1]`,
      );
    }
  }
  return {
    tokens: Int32Array.from(datum.modelInput),
    targets: lossFn === 'bradley_terry' ? null : asInt('target_tokens', aligned('target_tokens')),
    weights: asFloat('weights', aligned('weights')),
    samplingLogprobs: asFloat('logprobs', aligned('logprobs')),
    advantages: asFloat('advantages', aligned('advantages')),
    label,
  };
}

/**
 * Checks a loss_fn_config before any work. `temperature` τ scores π_train as
 * log-softmax(logits / τ): the distribution a sampler at temperature τ draws from, so the IS
 * ratio π_train/μ_infer compares like with like (docs/engines.md "Logprobs and temperature").
 */
export function checkLossConfig(lossFn: LossFn, config: LossFnConfig): void {
  const { temperature, clipLowThreshold: lo, clipHighThreshold: hi } = config;
  if (temperature !== undefined) {
    if (!(Number.isFinite(temperature) && temperature > 0))
      throw new RangeError(
        `loss_fn_config.temperature: must be a finite number > 0, got ${temperature}`,
      );
    if (lossFn === 'bradley_terry' && temperature !== 1)
      throw new RangeError('loss_fn_config.temperature: bradley_terry scores have no temperature');
  }
  for (const [name, v] of [
    ['clip_low_threshold', lo],
    ['clip_high_threshold', hi],
  ] as const) {
    if (v !== undefined && !(Number.isFinite(v) && v >= 0))
      throw new RangeError(`loss_fn_config.${name}: must be a finite number >= 0, got ${v}`);
  }
}

/** Token losses (sum reduction), given the trainer's logprobs logp (T) of the target tokens. */
export function tokenLoss(
  lossFn: Exclude<LossFn, 'bradley_terry'>,
  datum: CheckedDatum,
  logp: Float64Array,
  config: LossFnConfig = {},
): TokenLoss {
  const T = logp.length;
  const elementwise = new Float64Array(T);
  const dLogp = new Float64Array(T);
  const lo = config.clipLowThreshold ?? PPO_CLIP_LOW;
  const hi = config.clipHighThreshold ?? PPO_CLIP_HIGH;
  let lossSum = 0;
  for (let t = 0; t < T; t++) {
    if (lossFn === 'cross_entropy') {
      const w = datum.weights![t]!; // −w·logp
      elementwise[t] = -w * logp[t]!;
      dLogp[t] = -w;
    } else {
      // r = π_train / μ_infer per token (docs/recipe.md §2); IS loss −r·A
      const advantage = datum.advantages![t]!;
      const ratio = Math.exp(logp[t]! - datum.samplingLogprobs![t]!);
      const unclipped = ratio * advantage;
      if (lossFn === 'importance_sampling') {
        elementwise[t] = -unclipped;
        dLogp[t] = -unclipped; // d(−r·A)/dlogp = −r·A
      } else {
        // PPO: −min(r·A, clip(r, lo, hi)·A); the clipped branch carries no gradient
        const clipped = Math.min(Math.max(ratio, lo), hi) * advantage;
        const useUnclipped = unclipped <= clipped;
        elementwise[t] = -(useUnclipped ? unclipped : clipped);
        dLogp[t] = useUnclipped ? -unclipped : 0;
      }
    }
    lossSum += elementwise[t]!;
  }
  return { elementwise, dLogp, lossSum };
}

export interface PairLoss {
  loss: number;
  /** dL/ds_a and dL/ds_b. */
  dScoreA: number;
  dScoreB: number;
  /** 1 when the model ranks the pair as labelled (ties count half). */
  correct: number;
}

const logSigmoid = (z: number): number =>
  z >= 0 ? -Math.log1p(Math.exp(-z)) : z - Math.log1p(Math.exp(z));
const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/** ℓ_BT(Δ, r) = −[r·log σ(Δ) + (1−r)·log(1 − σ(Δ))] and dℓ/dΔ = σ(Δ) − r (docs/recipe.md §5). */
function bradleyTerry(delta: number, r: number): { loss: number; dDelta: number } {
  const loss = -(r * logSigmoid(delta) + (1 - r) * logSigmoid(-delta));
  return { loss, dDelta: sigmoid(delta) - r };
}

/**
 * Symmetric Bradley–Terry loss of one pair (docs/recipe.md §5):
 * L_sym = ½ ℓ_BT(s_a − s_b, r) + ½ ℓ_BT(s_b − s_a, 1 − r). For a pointwise scorer both halves
 * are equal; the second is still computed so the code is the formula.
 */
export function symmetricBradleyTerry(scoreA: number, scoreB: number, r: number): PairLoss {
  const forward = bradleyTerry(scoreA - scoreB, r);
  const swapped = bradleyTerry(scoreB - scoreA, 1 - r);
  const loss = 0.5 * forward.loss + 0.5 * swapped.loss;
  const dDeltaForward = 0.5 * forward.dDelta; // Δ = s_a − s_b
  const dDeltaSwapped = 0.5 * swapped.dDelta; // Δ' = s_b − s_a
  const margin = scoreA - scoreB;
  const correct = margin === 0 ? 0.5 : margin > 0 === r >= 0.5 ? 1 : 0;
  return {
    loss,
    dScoreA: dDeltaForward - dDeltaSwapped,
    dScoreB: -dDeltaForward + dDeltaSwapped,
    correct,
  };
}
