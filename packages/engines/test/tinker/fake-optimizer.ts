// The fake trainer's training state: a small parameter vector standing for a model's LoRA
// weights and the Adam state that updates it, so that what `load_weights` restores is observable
// (what a fork's first steps do to the weights). Read upstream:
//   - thinking-machines-lab/tinker src/tinker/lib/public_interfaces/training_client.py
//     @097e108902ffa80ab04240773e8d7e23347e2df5 `_load_state_impl`: `load_state` sends
//     `optimizer: false`, `load_state_with_optimizer` sends `optimizer: true`.
//   - NovaSky-AI/SkyRL skyrl/tinker/api.py @a9564572eb8e91076be43c1bd5e4615e3de17265
//     `LoadWeightsRequest.optimizer: bool = True` (absent = true) passed on as `load_optimizer`;
//     `load_weights` is only allowed as a model's first request, so the optimizer it keeps when
//     `load_optimizer` is false is the one `create_model` made (moments 0, step 0).
//   - SkyRL skyrl/backends/jax.py @a9564572e `_insert_checkpoint_data`: the LoRA weights always,
//     the optimizer state (optax adam: mu, nu, count) only `if load_optimizer`.
//   - optax `adamw` (the JAX backend's optimizer): m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g²,
//     count += 1, p ← p − lr·(m̂/(√v̂ + eps) + wd·p) with m̂ = m/(1−β1^count), v̂ = v/(1−β2^count).
// The gradient of parameter k is the sum of ∂L/∂logπ over the target tokens t with t mod
// FAKE_PARAM_COUNT = k (the fake's logprobs do not depend on these parameters: fakeLogprob reads
// the step count only; the parameters are what a test compares bit for bit).
import type { AdamParams, Datum } from '../../src/tinker/wire.ts';

export const FAKE_PARAM_COUNT = 8;

/** Weights and optimizer state of one fake model (what `save_weights` keeps). */
export interface FakeTrainingState {
  params: Float64Array;
  /** Adam first and second moments and step count (optax's mu, nu, count). */
  m: Float64Array;
  v: Float64Array;
  step: number;
}

/** A model as `create_model` makes it: fixed initial weights, a fresh optimizer. */
export function createTrainingState(): FakeTrainingState {
  const params = new Float64Array(FAKE_PARAM_COUNT).map((_, i) => (i + 1) / 16);
  return freshOptimizer(params);
}

function freshOptimizer(params: Float64Array): FakeTrainingState {
  return {
    params: Float64Array.from(params),
    m: new Float64Array(FAKE_PARAM_COUNT),
    v: new Float64Array(FAKE_PARAM_COUNT),
    step: 0,
  };
}

/** A copy of `state` (a save keeps it apart from later training). */
export function copyTrainingState(state: FakeTrainingState): FakeTrainingState {
  return {
    params: Float64Array.from(state.params),
    m: Float64Array.from(state.m),
    v: Float64Array.from(state.v),
    step: state.step,
  };
}

/** What `load_weights` leaves in the loading model: the saved weights, and the saved optimizer
 * state with `optimizer: true`, else the optimizer the model was created with. */
export function loadTrainingState(
  saved: FakeTrainingState,
  current: FakeTrainingState,
  optimizer: boolean,
): FakeTrainingState {
  if (optimizer) return copyTrainingState(saved);
  return { ...copyTrainingState(current), params: Float64Array.from(saved.params) };
}

/** ∂L/∂params of the datums accumulated since the last step (`dLogp` after the reduction). */
export function paramGradient(data: readonly Datum[], dLogp: readonly number[][]): Float64Array {
  const grad = new Float64Array(FAKE_PARAM_COUNT);
  data.forEach((datum, i) => {
    const targets = datum.loss_fn_inputs['target_tokens']?.data ?? [];
    dLogp[i]?.forEach((d, t) => {
      const token = Number(targets[t] ?? 0);
      grad[token % FAKE_PARAM_COUNT]! += d;
    });
  });
  return grad;
}

/** One optax-adamw update of `state` with the settings the server applied (Tinker defaults for
 * those it did not take: β 0.9 / 0.95, eps 1e-12, no weight decay). */
export function adamUpdate(
  state: FakeTrainingState,
  grad: Float64Array,
  adam: Partial<AdamParams>,
): void {
  const lr = adam.learning_rate ?? 1e-4;
  const [b1, b2] = [adam.beta1 ?? 0.9, adam.beta2 ?? 0.95];
  const eps = adam.eps ?? 1e-12;
  const wd = adam.weight_decay ?? 0;
  state.step += 1;
  const c1 = 1 - b1 ** state.step;
  const c2 = 1 - b2 ** state.step;
  for (let k = 0; k < FAKE_PARAM_COUNT; k++) {
    const g = grad[k]!;
    state.m[k] = b1 * state.m[k]! + (1 - b1) * g;
    state.v[k] = b2 * state.v[k]! + (1 - b2) * g * g;
    const update = state.m[k]! / c1 / (Math.sqrt(state.v[k]! / c2) + eps);
    state.params[k] = state.params[k]! - lr * (update + wd * state.params[k]!);
  }
}
