// The train–inference mismatch alone at every step, at any policy lag (docs/recipe.md §2.6
// "The mismatch at every step"). The KL of a lagged batch measures lag and mismatch together;
// the mismatch alone is π_train and μ at the same version, on tokens that version sampled.
// Step s trains version s − 1, which is both the sampler's current version and the trainer's
// weights until the step's optim_step. So when the step's batch is lagged, a small probe is
// sampled from version s − 1 (a few of the batch's prompts, one short completion each, no tool
// calls), concurrently with the step's forward_backward, and scored by a gradient-free forward
// before optim_step. A step with fresh rollouts (lag 0) needs no probe: those rollouts are it.
import type { InferenceEngine, TrainerModel } from '@anneal/engines';
import { MISMATCH_PROBE } from '@anneal/protocol';
import type { Rollout } from '@anneal/envs';
import { trainInferenceKl } from '@anneal/rl';
import { generatedLayout } from './advantages.ts';
import { assertFiniteTokens } from './finite-inputs.ts';
import type { PolicyVersions } from './policy-versions.ts';
import { samplingSeed } from '../common/sampling-seed.ts';
import { gatherTrainLogprobs, isData } from './train-step.ts';

/** Probe size: one completion of at most `maxTokens` for each of the batch's first `prompts`
 * prompts (docs/performance.md "Mismatch probe" measures what it costs). Defined in
 * @anneal/protocol, whose run estimate counts it (usage-estimate.ts). */
export { MISMATCH_PROBE };

export interface MismatchKl {
  k1: number;
  k3: number;
  tokens: number;
}

export interface ProbeRequest {
  engine: InferenceEngine;
  versions: PolicyVersions;
  /** The step's prompts (token ids), one per group. */
  prompts: readonly (readonly number[])[];
  sampling: {
    temperature: number;
    topP: number;
    maxTokens: number;
    stopTokenIds: readonly number[];
  };
  seed: number;
  step: number;
}

/** A probe completion as a rollout: the prompt, then generated tokens only. */
function probeRollout(prompt: readonly number[], tokens: number[], logprobs: number[]): Rollout {
  return {
    tokens: [...prompt, ...tokens],
    promptLength: prompt.length,
    lossMask: [...prompt.map(() => 0), ...tokens.map(() => 1)],
    logprobs: [...prompt.map(() => 0), ...logprobs],
    generatedTokens: tokens.length,
    toolCalls: 0,
    toolErrors: 0,
    refusedCalls: 0,
    calls: [],
    answer: null,
    finish: 'length',
    truncated: true,
  };
}

/** Samples the probe from the current version, pinned while it runs. */
export async function sampleMismatchProbe(request: ProbeRequest): Promise<Rollout[]> {
  const { engine, versions, sampling, step } = request;
  const pinned = versions.pin();
  try {
    // the version the step trains, which the trainer holds until its optim_step
    if (pinned.version !== step - 1) {
      throw new Error(
        `mismatch probe of step ${step}: the sampler serves version ${pinned.version}, the trainer holds ${step - 1}`,
      );
    }
    const prompts = request.prompts.slice(0, MISMATCH_PROBE.prompts);
    const maxTokens = Math.min(MISMATCH_PROBE.maxTokens, sampling.maxTokens);
    const samples = await Promise.all(
      prompts.map((prompt, g) =>
        engine.sample({
          prompt,
          n: 1,
          maxTokens,
          temperature: sampling.temperature,
          topP: sampling.topP,
          stopTokenIds: sampling.stopTokenIds,
          seed: samplingSeed(request.seed, `mismatch-probe:${step}:${g}`),
          model: pinned.name,
        }),
      ),
    );
    return samples
      .map((s, g) => probeRollout(prompts[g]!, s[0]?.tokens ?? [], s[0]?.logprobs ?? []))
      .filter((r) => r.generatedTokens > 0);
  } finally {
    await versions.unpin(pinned.version);
  }
}

/** k1, k3 of π_train at the current weights against the probe's sampler (docs/recipe.md §2.4);
 * null for a probe without tokens. */
export async function probeMismatch(
  model: TrainerModel,
  probe: readonly Rollout[],
  step: number,
): Promise<MismatchKl | null> {
  if (probe.length === 0) return null;
  const layout = generatedLayout(probe);
  assertFiniteTokens(layout.logpInfer, layout, 'mismatch probe logprobs', step, 'mismatch_kl');
  const noAdvantages = new Float32Array(layout.logpInfer.length);
  const scored = await model.forward(isData(probe, layout, noAdvantages), 'importance_sampling');
  const logpTrain = gatherTrainLogprobs(layout, scored.logprobs);
  assertFiniteTokens(logpTrain, layout, 'mismatch probe trainer logprobs', step, 'mismatch_kl');
  return trainInferenceKl(logpTrain, layout.logpInfer);
}
