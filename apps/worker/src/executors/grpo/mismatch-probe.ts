// The train–inference mismatch alone at every step, at any policy lag (docs/recipe.md §2.6
// "The mismatch at every step"). The KL of a lagged batch measures lag and mismatch together;
// the mismatch alone is π_train and μ at the same version, on tokens that version sampled.
// Step s trains version s − 1, which is both the sampler's current version and the trainer's
// weights until the step's optim_step. So when the step's batch is lagged, a probe is sampled
// from version s − 1 concurrently with the step's forward_backward, and scored by a
// gradient-free forward as soon as it is in — beside forward_backward, not after it — which
// the step awaits before optim_step (step.ts). The probe's rollouts are the batch's kind: whole
// multi-turn rollouts with tools through the same rollout loop and environment (a mismatch that
// shows only after tool results or grows with the context shows in it as in the batch), as
// many as `rollout.probeFraction` of the batch's generated tokens takes. A step with fresh
// rollouts (lag 0) needs no probe: those rollouts are it.
import type { TrainerModel } from '@anneal/engines';
import { runRollouts, type Rollout, type RolloutEnv } from '@anneal/envs';
import { MIN_PROBE_ROLLOUTS } from '@anneal/protocol';
import { releaseStepBuffers, trainInferenceKl } from '@anneal/rl';
import { generatedLayout } from './advantages.ts';
import { assertFiniteTokens } from './finite-inputs.ts';
import type { PolicyVersions } from './policy-versions.ts';
import { samplingSeed } from '../common/sampling-seed.ts';
import { gatherTrainLogprobs, isData } from './train-step.ts';

export interface MismatchKl {
  k1: number;
  k3: number;
  tokens: number;
}

/** A lagged step's mismatch probe, launched ahead of its step or with it. */
export interface LaunchedProbe {
  step: number;
  /** Its rollouts and their KL, once scored. */
  scored: Promise<{ rollouts: readonly Rollout[]; kl: MismatchKl | null }>;
  /** Called when forward_backward has returned; what optim_step waits for: the probe scored on
   * the policy model, or a copy of its weights saved (probe-weights.ts). */
  beforeUpdate(): Promise<void>;
  /** Called once the step's training is over (also when it failed before optim_step). */
  close(): void;
  /** Aborts its rollouts (a probe launched ahead that the run drops). */
  abort(): void;
}

/** What the probe is sized against: the step's batch. */
export interface ProbeBatch {
  /** Policy rollouts in the batch. */
  rollouts: number;
  /** Their generated tokens. */
  generatedTokens: number;
}

/** The probe's token budget, ⌈fraction × the batch's generated tokens⌉, in whole rollouts: as
 * many as the batch's mean rollout length says the budget takes, at least MIN_PROBE_ROLLOUTS,
 * at most the batch's count; none for a batch that generated nothing. */
export function probeSize(
  batch: ProbeBatch,
  fraction: number,
): { tokens: number; rollouts: number } {
  if (batch.rollouts === 0 || batch.generatedTokens === 0) return { tokens: 0, rollouts: 0 };
  const tokens = Math.ceil(fraction * batch.generatedTokens);
  const mean = batch.generatedTokens / batch.rollouts;
  const rollouts = Math.max(MIN_PROBE_ROLLOUTS, Math.ceil(tokens / mean));
  return { tokens, rollouts: Math.min(batch.rollouts, rollouts) };
}

export interface ProbeRequest {
  /** The policy's rollout environment (engine, chat format, search tool, budgets). */
  env: RolloutEnv;
  versions: PolicyVersions;
  /** The step's prompts (token ids), one per group; probe rollout i takes prompt i mod P. */
  prompts: readonly (readonly number[])[];
  batch: ProbeBatch;
  /** `rollout.probeFraction`. */
  fraction: number;
  seed: number;
  step: number;
  /** Aborts the probe's rollouts (a probe launched ahead of its step that the run drops). */
  signal?: AbortSignal;
}

/** Samples the probe from the current version, pinned while it runs: one rollout (n = 1) per
 * request, seeded per step and rollout. */
export async function sampleMismatchProbe(request: ProbeRequest): Promise<Rollout[]> {
  const { env, versions, prompts, step } = request;
  const pinned = versions.pin();
  try {
    // the version the step trains, which the trainer holds until its optim_step
    if (pinned.version !== step - 1) {
      throw new Error(
        `mismatch probe of step ${step}: the sampler serves version ${pinned.version}, the trainer holds ${step - 1}`,
      );
    }
    const { rollouts } = probeSize(request.batch, request.fraction);
    if (rollouts === 0 || prompts.length === 0) return [];
    const requests = Array.from({ length: rollouts }, (_, i) => ({
      prompt: prompts[i % prompts.length]!,
      n: 1,
      seed: samplingSeed(request.seed, `mismatch-probe:${step}:${i}`),
    }));
    const probeEnv = { ...env, config: { ...env.config, model: pinned.name } };
    const groups = await runRollouts(probeEnv, requests, request.signal);
    return groups.flat().filter((r) => r.generatedTokens > 0);
  } finally {
    await versions.unpin(pinned.version);
  }
}

/** k1, k3 of π_train at the current weights against the probe's sampler (docs/recipe.md §2.4),
 * token-weighted over all the probe's generated tokens; null for a probe without tokens. */
export async function probeMismatch(
  model: TrainerModel,
  probe: readonly Rollout[],
  step: number,
): Promise<MismatchKl | null> {
  if (probe.length === 0) return null;
  const layout = generatedLayout(probe);
  try {
    assertFiniteTokens(layout.logpInfer, layout, 'mismatch probe logprobs', step, 'mismatch_kl');
    // a forward: the advantages are not used (the layout's tokenAdvantages, zeroed)
    const scored = await model.forward(
      isData(probe, layout, layout.tokenAdvantages),
      'importance_sampling',
    );
    const logpTrain = gatherTrainLogprobs(layout, scored.logprobs);
    assertFiniteTokens(logpTrain, layout, 'mismatch probe trainer logprobs', step, 'mismatch_kl');
    return trainInferenceKl(logpTrain, layout.logpInfer);
  } finally {
    releaseStepBuffers(layout);
  }
}
