// The fake trainer's arithmetic: fixed per-token "policy" logprobs and the three losses of
// docs/engines.md computed exactly from them, so tests can check what the client sends.
import type { Datum, ForwardBackwardOutput, LossFnConfig, WireLossFn } from '../wire.ts';

/** π_train logprob of target token `t` after `steps` optimiser steps. */
export function fakeLogprob(target: number, steps: number): number {
  return -(1 + (target % 7) / 10) / (1 + steps);
}

export function computeLoss(
  data: Datum[],
  lossFn: WireLossFn,
  config: LossFnConfig | null | undefined,
  steps: number,
): ForwardBackwardOutput {
  let total = 0;
  const outputs = data.map((datum) => {
    const inputs = datum.loss_fn_inputs;
    const targets = inputs['target_tokens']?.data ?? [];
    const logprobs = targets.map((t) => fakeLogprob(t, steps));
    const elementwise = logprobs.map((logp, i) => tokenLoss(lossFn, logp, i, inputs, config));
    total += elementwise.reduce((a, b) => a + b, 0);
    return {
      logprobs: { data: logprobs, dtype: 'float32' as const, shape: [logprobs.length] },
      elementwise_loss: {
        data: elementwise,
        dtype: 'float32' as const,
        shape: [elementwise.length],
      },
    };
  });
  return {
    loss_fn_output_type: 'scalar',
    loss_fn_outputs: outputs,
    metrics: { 'loss:sum': total },
  };
}

function tokenLoss(
  lossFn: WireLossFn,
  logp: number,
  i: number,
  inputs: Datum['loss_fn_inputs'],
  config: LossFnConfig | null | undefined,
): number {
  const at = (name: string): number => inputs[name]?.data[i] ?? 0;
  if (lossFn === 'cross_entropy') return -at('weights') * logp;
  const ratio = Math.exp(logp - at('logprobs'));
  const advantage = at('advantages');
  if (lossFn === 'importance_sampling') return -ratio * advantage;
  const lo = config?.['clip_low_threshold'] ?? 0.8;
  const hi = config?.['clip_high_threshold'] ?? 1.2;
  const clipped = Math.min(Math.max(ratio, lo), hi);
  return -Math.min(ratio * advantage, clipped * advantage);
}
