// Run-spec optimizer section -> the trainer's optim_step parameters (docs/engines.md).
import type { AdamParams } from '@anneal/engines';
import type { GrpoSpec, RmSpec, SftSpec } from '@anneal/protocol';

export function adamParams(spec: SftSpec | RmSpec | GrpoSpec): AdamParams {
  const o = spec.optimizer;
  return {
    learningRate: o.learningRate,
    beta1: o.beta1,
    beta2: o.beta2,
    eps: o.eps,
    weightDecay: o.weightDecay,
    gradClipNorm: o.gradClipNorm,
  };
}
