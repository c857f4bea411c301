// Run-spec optimizer section -> the trainer's optim_step parameters (docs/engines.md); a
// guardrail rollback may scale the learning rate (docs/guardrails.md "Rollback").
import type { AdamParams } from '@anneal/engines';
import type { GrpoSpec, RmSpec, SftSpec } from '@anneal/protocol';

export function adamParams(spec: SftSpec | RmSpec | GrpoSpec, learningRateScale = 1): AdamParams {
  const o = spec.optimizer;
  return {
    learningRate: o.learningRate * learningRateScale,
    beta1: o.beta1,
    beta2: o.beta2,
    eps: o.eps,
    weightDecay: o.weightDecay,
    gradClipNorm: o.gradClipNorm,
  };
}
