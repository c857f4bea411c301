// The fake trainer's arithmetic: fixed per-token "policy" logprobs, the losses of docs/engines.md
// computed exactly from them, and each backend's reduction of those token losses over the
// weights it receives, with the gradient it would back-propagate (∂L/∂logπ per target token).
// Read at SkyRL a9564572e (NovaSky-AI/SkyRL) and the tinker docs:
//   skyrl-jax  skyrl/tinker/api.py Datum.to_types: no `weights` -> 1.0 on every target position;
//              skyrl/tinker/loss_fns.py: every loss is multiplied by the weight (safe_loss_mask);
//              skyrl/backends/jax.py loss_for_lora: per datum Σ_t ℓ_t / max(Σ_t w_t, 1e-9), summed;
//              AccumulatedGradients.get_mean: the sum is divided at optim_step by the number of
//              datums accumulated for the model since the last one (every forward_backward call).
//   skyrl-fsdp the same to_types; skyrl/backends/skyrl_train/utils/ppo_utils.py
//              cross_entropy_loss / importance_sampling_loss: (ℓ · loss_mask).sum(), loss_mask =
//              the weights; workers/worker.py: gradients summed over micro-batches (× dp_size).
//   tinker     tinker-docs.thinkingmachines.ai/losses: sums token losses; cross_entropy is −w·logπ,
//              importance_sampling −r·A (whether the hosted service multiplies it by `weights`
//              cannot be read: the service is closed; Anneal's A is 0 off the loss mask either way).
import type {
  Datum,
  ForwardBackwardOutput,
  LossFnConfig,
  WireLossFn,
} from '../../src/tinker/wire.ts';

/** The server arithmetic a fake reproduces. */
export type FakeBackend = 'skyrl-jax' | 'skyrl-fsdp' | 'tinker';

/** π_train logprob of target token `t` after `steps` optimiser steps. */
export function fakeLogprob(target: number, steps: number): number {
  return -(1 + (target % 7) / 10) / (1 + steps);
}

/** One datum's share of the backend's loss and its gradient w.r.t. each target's logπ, before
 * the per-step division a `skyrl-jax` backend applies at optim_step (`datumDivisor`). */
export interface DatumGradient {
  loss: number;
  /** ∂(this datum's loss)/∂logπ_t per target position. */
  dLogp: number[];
  /** π_train's logprob of each target, at which the gradient was taken. */
  logprobs: number[];
}

export interface ComputedLoss {
  output: ForwardBackwardOutput;
  gradients: DatumGradient[];
}

/**
 * The datums as a trainer holds them: every `float32` loss input rounded to float32, as SkyRL
 * does when it builds its arrays from the JSON's Python floats (@a9564572e skyrl/backends/jax.py
 * `pad_batch(all_token_weights | all_sampling_logprobs | all_advantages, max_len, np.float32)`;
 * skyrl/backends/skyrl_train_backend.py `torch.tensor(…, dtype=torch.float32)`). A client may
 * send any decimal that rounds to the float32 it means (JsonBytesWriter.float32s writes at most
 * 9 digits); the losses are computed from the float32, as for real.
 */
export function heldAsFloat32(data: readonly Datum[]): Datum[] {
  return data.map((datum) => ({
    ...datum,
    loss_fn_inputs: Object.fromEntries(
      Object.entries(datum.loss_fn_inputs).map(([name, tensor]) => [
        name,
        tensor.dtype === 'float32' ? { ...tensor, data: tensor.data.map(Math.fround) } : tensor,
      ]),
    ),
  }));
}

/** The weights a backend uses for a datum: SkyRL fills 1.0 on every target when none are sent. */
export function receivedWeights(datum: Datum): number[] {
  const targets = datum.loss_fn_inputs['target_tokens']?.data ?? [];
  const weights = datum.loss_fn_inputs['weights']?.data;
  return weights === undefined ? targets.map(() => 1) : [...weights];
}

/** What a backend divides a datum's weighted token-loss sum by. */
function datumDivisor(backend: FakeBackend, weights: readonly number[]): number {
  if (backend !== 'skyrl-jax') return 1;
  return Math.max(
    weights.reduce((a, b) => a + b, 0),
    1e-9,
  );
}

export function computeLoss(
  data: Datum[],
  lossFn: WireLossFn,
  config: LossFnConfig | null | undefined,
  steps: number,
  backend: FakeBackend = 'skyrl-jax',
): ComputedLoss {
  let total = 0;
  const gradients: DatumGradient[] = [];
  const outputs = data.map((datum) => {
    const inputs = datum.loss_fn_inputs;
    const targets = inputs['target_tokens']?.data ?? [];
    const weights = receivedWeights(datum);
    const logprobs = targets.map((t) => fakeLogprob(t, steps));
    const tokens = logprobs.map((logp, i) =>
      tokenLoss(backend, lossFn, logp, i, inputs, weights[i] ?? 0, config),
    );
    const elementwise = tokens.map((t) => t.loss);
    const divisor = datumDivisor(backend, weights);
    gradients.push({
      loss: elementwise.reduce((a, b) => a + b, 0) / divisor,
      dLogp: tokens.map((t) => t.dLogp / divisor),
      logprobs,
    });
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
    output: {
      loss_fn_output_type: 'scalar',
      loss_fn_outputs: outputs,
      metrics: { 'loss:sum': total },
    },
    gradients,
  };
}

/** Token loss ℓ_t and ∂ℓ_t/∂logπ_t. SkyRL multiplies every loss by the weight; hosted Tinker's
 * documented policy losses take no weight. */
function tokenLoss(
  backend: FakeBackend,
  lossFn: WireLossFn,
  logp: number,
  i: number,
  inputs: Datum['loss_fn_inputs'],
  weight: number,
  config: LossFnConfig | null | undefined,
): { loss: number; dLogp: number } {
  const at = (name: string): number => inputs[name]?.data[i] ?? 0;
  if (lossFn === 'cross_entropy') return { loss: -weight * logp, dLogp: -weight };
  const w = backend === 'tinker' ? 1 : weight;
  const ratio = Math.exp(logp - at('logprobs'));
  const advantage = at('advantages');
  if (lossFn === 'importance_sampling') {
    return { loss: -w * ratio * advantage, dLogp: -w * ratio * advantage };
  }
  const lo = config?.['clip_low_threshold'] ?? 0.8;
  const hi = config?.['clip_high_threshold'] ?? 1.2;
  const clipped = Math.min(Math.max(ratio, lo), hi);
  const unclippedWins = ratio * advantage <= clipped * advantage;
  return {
    loss: -w * Math.min(ratio * advantage, clipped * advantage),
    dLogp: unclippedWins ? -w * ratio * advantage : 0,
  };
}
