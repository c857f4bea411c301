// AdamW for the embedded trainer with Tinker's adam_params (docs/engines.md: learning_rate,
// beta1 0.9, beta2 0.95, eps 1e-12, weight_decay 0) plus global-norm gradient clipping.
// The global L2 gradient norm is measured before clipping (docs/recipe.md §2 reports it every step).
import type { AdamParams } from '../types.ts';
import type { Floats } from './gemm.ts';
import type { ParamLayout } from './params.ts';

/** Tinker's defaults; gradClipNorm 0 = no clipping. */
export const DEFAULT_ADAM_PARAMS: Readonly<AdamParams> = Object.freeze({
  learningRate: 1e-4,
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-12,
  weightDecay: 0,
  gradClipNorm: 0,
});

export interface AdamState {
  /** First and second moments, in the parameter layout. */
  m: Float32Array;
  v: Float32Array;
  /** Number of steps taken (bias correction). */
  step: number;
}

export function createAdamState(size: number): AdamState {
  return { m: new Float32Array(size), v: new Float32Array(size), step: 0 };
}

export function validateAdamParams(p: AdamParams): AdamParams {
  const check = (name: string, ok: boolean, value: number) => {
    if (!ok) throw new RangeError(`adam_params.${name}: invalid value ${value}`);
  };
  check('learning_rate', Number.isFinite(p.learningRate) && p.learningRate >= 0, p.learningRate);
  check('beta1', p.beta1 >= 0 && p.beta1 < 1, p.beta1);
  check('beta2', p.beta2 >= 0 && p.beta2 < 1, p.beta2);
  check('eps', Number.isFinite(p.eps) && p.eps > 0, p.eps);
  check('weight_decay', Number.isFinite(p.weightDecay) && p.weightDecay >= 0, p.weightDecay);
  check('grad_clip_norm', Number.isFinite(p.gradClipNorm) && p.gradClipNorm >= 0, p.gradClipNorm);
  return p;
}

/** Global L2 norm of all gradients, accumulated in float64. */
export function globalGradNorm(grads: Floats): number {
  let sumSquares = 0;
  for (let i = 0; i < grads.length; i++) sumSquares += grads[i]! * grads[i]!;
  return Math.sqrt(sumSquares);
}

export interface AdamStepResult {
  /** Global L2 norm before clipping. */
  gradNorm: number;
  /** Factor the gradients were scaled by (1 when not clipped). */
  clipScale: number;
}

/**
 * One AdamW update of params from grads (torch.optim.AdamW semantics, decoupled weight decay on
 * the tensors the layout marks `decay`). Zeroes grads afterwards: the next forward_backward
 * starts a new accumulation, as in Tinker.
 */
export function adamWStep(
  layout: ParamLayout,
  params: Floats,
  grads: Floats,
  state: AdamState,
  p: AdamParams,
): AdamStepResult {
  validateAdamParams(p);
  const gradNorm = globalGradNorm(grads);
  if (!Number.isFinite(gradNorm)) {
    throw new RangeError(`gradient norm is ${gradNorm}; refusing the update (weights unchanged)`);
  }
  const clipScale =
    p.gradClipNorm > 0 && gradNorm > p.gradClipNorm ? p.gradClipNorm / (gradNorm + 1e-6) : 1;
  state.step += 1;
  const biasCorrection1 = 1 - p.beta1 ** state.step;
  const biasCorrection2 = 1 - p.beta2 ** state.step;
  const stepSize = p.learningRate / biasCorrection1;
  const { m, v } = state;
  for (const spec of layout.tensors) {
    const decay = spec.decay ? 1 - p.learningRate * p.weightDecay : 1;
    const end = spec.offset + spec.size;
    for (let i = spec.offset; i < end; i++) {
      const g = grads[i]! * clipScale;
      m[i] = p.beta1 * m[i]! + (1 - p.beta1) * g;
      v[i] = p.beta2 * v[i]! + (1 - p.beta2) * g * g;
      const denom = Math.sqrt(v[i]! / biasCorrection2) + p.eps;
      params[i] = params[i]! * decay - (stepSize * m[i]!) / denom;
    }
  }
  grads.fill(0);
  return { gradNorm, clipScale };
}
