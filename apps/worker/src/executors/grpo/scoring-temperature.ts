// π_train scored at the rollout temperature (docs/engines.md "Logprobs and temperature"): the
// sampler reports μ_infer of the distribution it drew from, softmax(logits / T), so the trainer
// must score log-softmax(logits / T) for the IS ratio of docs/recipe.md §2 to measure the
// train–inference mismatch rather than the temperature. Submission refuses T ≠ 1 on trainers that
// cannot do this (@anneal/protocol grpoSamplingIssues); at T = 1 the model is used unchanged, so
// Tinker-API trainers never see the field.
import type { Datum, LossFn, LossFnConfig, TrainerModel } from '@anneal/engines';

/** `model` with `temperature` added to the loss config of every forward / forward_backward;
 * every other member is the model's own (a Proxy, so members added to TrainerModel follow). */
export function scoredAtTemperature(model: TrainerModel, temperature: number): TrainerModel {
  if (temperature === 1) return model;
  const at = (config?: LossFnConfig): LossFnConfig => ({ ...config, temperature });
  return new Proxy(model, {
    get(target, prop) {
      if (prop === 'forward' || prop === 'forwardBackward') {
        return (data: readonly Datum[], lossFn: LossFn, config?: LossFnConfig) =>
          target[prop](data, lossFn, at(config));
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}
