// What a run kind needs from its trainer endpoint: the one table the control plane (at
// submission, via resolveRunSpec) and the worker (at run setup, via @anneal/engines
// `checkRunSupported`) both check, so a run is accepted or refused the same way everywhere.
import type {
  InferenceEndpointConfig,
  LogprobsMode,
  TrainerEndpointConfig,
  TrainerLoss,
} from './operator-config.ts';
import type { RunKind } from './run-spec/common.ts';

/** Losses each kind's executor trains with (docs/engines.md "Losses"); `eval` only samples.
 * grpo trains with `importance_sampling` only (docs/recipe.md §2: the executor never calls `ppo`). */
export const KIND_LOSSES: Readonly<Record<RunKind, readonly TrainerLoss[]>> = {
  sft: ['cross_entropy'],
  rm: ['bradley_terry'],
  grpo: ['importance_sampling'],
  eval: [],
};

/** The part of an endpoint's declared capabilities the check reads. */
export interface DeclaredTrainerCapabilities {
  kinds: readonly RunKind[];
  losses: readonly TrainerLoss[];
}

const HINTS: Readonly<Record<RunKind, string>> = {
  rm: 'use the embedded trainer or another rm-capable backend',
  sft: 'register an endpoint that declares sft',
  grpo: 'register an endpoint that declares grpo',
  eval: 'register an endpoint that declares eval',
};

/**
 * Why `endpoint` cannot run `kind`, or undefined when it can. Example: "trainer endpoint
 * 'tinker-prod' cannot run kind 'rm': it supports losses [cross_entropy, importance_sampling,
 * ppo]; rm needs bradley_terry (use the embedded trainer or another rm-capable backend)".
 */
export function trainerCapabilityIssue(
  capabilities: DeclaredTrainerCapabilities,
  kind: RunKind,
  endpoint = 'trainer',
): string | undefined {
  const needed = KIND_LOSSES[kind];
  if (needed === undefined) return `unknown run kind '${String(kind)}'`;
  const head = `trainer endpoint '${endpoint}' cannot run kind '${kind}'`;
  const missing = needed.filter((loss) => !capabilities.losses.includes(loss));
  if (missing.length > 0) {
    return (
      `${head}: it supports losses [${capabilities.losses.join(', ')}]; ${kind} needs ` +
      `${missing.join(', ')} (${HINTS[kind]})`
    );
  }
  if (!capabilities.kinds.includes(kind)) {
    return `${head}: it declares kinds [${capabilities.kinds.join(', ')}] (${HINTS[kind]})`;
  }
  return undefined;
}

// ---- Trainer backends (docs/engines.md "Compatibility matrix"): what differs between the
// servers behind a Tinker-compatible endpoint, in one table every check reads: the worker (grad
// clipping notice, sampler export handling) and the vLLM pairing check (LoRA vs full weights).

/** The server behind a trainer endpoint: SkyRL's Tinker server (JAX or FSDP backend), hosted
 * Tinker, or Anneal's embedded trainer. */
export const TRAINER_BACKENDS = ['skyrl-jax', 'skyrl-fsdp', 'tinker', 'embedded'] as const;
export type TrainerBackend = (typeof TRAINER_BACKENDS)[number];

export interface TrainerBackendTraits {
  /** How token losses are reduced (docs/engines.md "Reduction"): the name the endpoint declares. */
  reduction: 'sum' | 'mean_per_sequence';
  /** What the backend divides the weighted token losses w·ℓ by, given the `weights` w it receives
   * (SkyRL fills an absent `weights` with 1 on every target position):
   *  - `nothing`: L = Σ_i Σ_t w_{i,t}·ℓ_{i,t};
   *  - `weight-sum-then-datums`: L = 1/D Σ_i (Σ_t w_{i,t}·ℓ_{i,t}) / max(Σ_t w_{i,t}, 1e-9), D the
   *    datums accumulated since the last optim_step (a per-datum scale of w cancels). */
  lossDivisor: 'nothing' | 'weight-sum-then-datums';
  /** What sampling checkpoint c of model m through the server's own sampler does
   * (docs/engines.md "Conformance"):
   *  - `isolated`: samples c; the weights m trains are untouched;
   *  - `loads-into-training-slot`: loads c into m's one adapter slot, the weights being trained,
   *    unless c is the checkpoint last loaded there (training does not clear that mark);
   *  - `latest-synced`: ignores c and samples m's weights as of its last save_weights_for_sampler;
   *  - `not-served`: the backend does not sample. */
  checkpointSampling: 'isolated' | 'loads-into-training-slot' | 'latest-synced' | 'not-served';
  /** Whether the server can sample the base model itself (`base_model` instead of a checkpoint). */
  samplesBaseModel: boolean;
  /** Models one server trains side by side: SkyRL FSDP holds one LoRA adapter per worker group. */
  models: 'many' | 'one';
  /** What `save_weights_for_sampler` writes: a LoRA adapter, the full merged model, or the
   * embedded ONNX export. A `full` export cannot be loaded as a vLLM LoRA adapter. SkyRL FSDP's
   * is a PEFT adapter (`PeftModel.save_pretrained`) plus config.json and the tokenizer. */
  samplerExport: 'lora' | 'full' | 'onnx';
  /** What else `save_weights_for_sampler` does: nothing (`export`), or start the server's own
   * colocated inference engines on first use and broadcast the policy into them every time
   * (`colocated-engines`: SkyRL FSDP, skyrl_train_backend.py `save_sampler_checkpoint`). */
  samplerSync: 'export' | 'colocated-engines';
  /** What happens to `AdamParams.grad_clip_norm`: applied per request, replaced by the server's
   * own setting (SkyRL FSDP: its `max_grad_norm`), or dropped (docs/engines.md "Gradient norm"). */
  gradClip: 'per-request' | 'server-configured' | 'ignored';
  /** Which `adam_params` the server applies: all of them per request, or the learning rate only
   * (SkyRL FSDP: beta1, beta2, eps and weight_decay are fixed when its optimizer is created). */
  adamParams: 'per-request' | 'learning-rate-only';
  /** Whether the server deletes checkpoints (DELETE `training_runs/<id>/checkpoints/…`). */
  deletesCheckpoints: boolean;
  /** Whether the server samples itself (`asample`), so it can be an inference endpoint. */
  samples: boolean;
}

export const TRAINER_BACKEND_TRAITS: Readonly<Record<TrainerBackend, TrainerBackendTraits>> = {
  'skyrl-jax': {
    reduction: 'mean_per_sequence',
    lossDivisor: 'weight-sum-then-datums',
    checkpointSampling: 'loads-into-training-slot',
    samplesBaseModel: true,
    models: 'many',
    samplerExport: 'lora',
    samplerSync: 'export',
    gradClip: 'ignored',
    adamParams: 'per-request',
    deletesCheckpoints: true,
    samples: true,
  },
  'skyrl-fsdp': {
    reduction: 'sum',
    lossDivisor: 'nothing',
    checkpointSampling: 'latest-synced',
    samplesBaseModel: false,
    models: 'one',
    samplerExport: 'lora',
    samplerSync: 'colocated-engines',
    gradClip: 'server-configured',
    adamParams: 'learning-rate-only',
    deletesCheckpoints: true,
    samples: true,
  },
  tinker: {
    reduction: 'sum',
    lossDivisor: 'nothing',
    checkpointSampling: 'isolated',
    samplesBaseModel: true,
    models: 'many',
    samplerExport: 'lora',
    samplerSync: 'export',
    gradClip: 'per-request',
    adamParams: 'per-request',
    deletesCheckpoints: true,
    samples: true,
  },
  embedded: {
    reduction: 'sum',
    lossDivisor: 'nothing',
    checkpointSampling: 'not-served',
    samplesBaseModel: false,
    models: 'many',
    samplerExport: 'onnx',
    samplerSync: 'export',
    gradClip: 'per-request',
    adamParams: 'per-request',
    deletesCheckpoints: true,
    samples: false,
  },
};

/** Why a run's Adam settings other than the learning rate are not the ones it trains with on
 * `backend`, or undefined when they are (a notice: the run trains with the server's own). */
export function adamParamsNotice(backend: TrainerBackend, endpoint?: string): string | undefined {
  if (TRAINER_BACKEND_TRAITS[backend].adamParams === 'per-request') return undefined;
  const which = endpoint === undefined ? 'the trainer endpoint' : `trainer endpoint '${endpoint}'`;
  return (
    `optimizer.beta1, beta2, eps and weightDecay are not applied: ${which} (backend ${backend}) ` +
    'applies only the learning rate of each optim_step; the others are fixed by the server’s ' +
    'optimizer config (docs/engines.md "Conformance")'
  );
}

/** Why a run asking for gradient clipping at `gradClipNorm` (> 0) does not get it on `backend`,
 * or undefined when it does. A notice, not a refusal: the run trains, unclipped or clipped at the
 * server's own norm. */
export function gradClipNotice(
  backend: TrainerBackend,
  gradClipNorm: number,
  endpoint?: string,
): string | undefined {
  if (!(gradClipNorm > 0)) return undefined;
  const clip = TRAINER_BACKEND_TRAITS[backend].gradClip;
  if (clip === 'per-request') return undefined;
  const which = endpoint === undefined ? 'the trainer endpoint' : `trainer endpoint '${endpoint}'`;
  const head = `optimizer.gradClipNorm ${gradClipNorm} is not applied: ${which} (backend ${backend})`;
  return clip === 'ignored'
    ? `${head} ignores grad_clip_norm and does not clip, so gradients are unclipped (docs/engines.md "Gradient norm")`
    : `${head} ignores grad_clip_norm and clips at its own server-configured max_grad_norm instead (docs/engines.md "Gradient norm")`;
}

// ---- GRPO sampling settings the trainer can match (docs/engines.md "Logprobs and temperature").
// μ_infer is the distribution the rollout was actually drawn from: softmax(logits / T) truncated
// to the top-p nucleus. The IS ratio π_train/μ_infer of docs/recipe.md §2 measures the train–
// inference mismatch only when π_train is scored on that same distribution; otherwise it measures
// the sampling settings. These rules refuse, at submission, the settings no endpoint can match.

/** vLLM samples greedily below this temperature (vllm/v1/sample/sampler.py `_SAMPLING_EPS`). */
export const GREEDY_TEMPERATURE = 1e-5;

/** The rollout settings the rules read (a GRPO spec's `rollout` section). */
export interface RolloutSampling {
  temperature: number;
  topP: number;
  allowTopPBias: boolean;
}

/** A named endpoint of the operator config. */
export interface NamedEndpoint<T> {
  name: string;
  config: T;
}

export interface SamplingIssue {
  /** JSON pointer of the spec field to change. */
  path: string;
  message: string;
}

/**
 * Whether a trainer endpoint scores π_train at a sampling temperature (`loss_fn_config.
 * temperature`). Only the embedded trainer does; the Tinker API's losses (hosted Tinker, SkyRL)
 * take no temperature and score log-softmax(logits) at T = 1.
 */
export function trainerScoresAtTemperature(trainer: TrainerEndpointConfig): boolean {
  return trainer.type === 'embedded';
}

/** What an inference endpoint reports as each sampled token's logprob. The embedded sampler
 * reports processed logprobs; vLLM what its `--logprobs-mode` says (declared; default raw). */
export function reportedLogprobsMode(inference: InferenceEndpointConfig): LogprobsMode {
  return inference.type === 'vllm'
    ? (inference.logprobsMode ?? 'raw_logprobs')
    : 'processed_logprobs';
}

const DOC = 'docs/engines.md "Logprobs and temperature"';

/** Why GRPO rollouts at `sampling` on these endpoints would give IS ratios that measure the
 * sampling settings instead of the train–inference mismatch; [] when they would not. */
export function grpoSamplingIssues(
  sampling: RolloutSampling,
  trainer: NamedEndpoint<TrainerEndpointConfig> | undefined,
  inference: NamedEndpoint<InferenceEndpointConfig> | undefined,
): SamplingIssue[] {
  const { temperature: T, topP } = sampling;
  const issues: SamplingIssue[] = [];
  if (T < GREEDY_TEMPERATURE) {
    issues.push({
      path: '/rollout/temperature',
      message: `rollout.temperature ${T} is greedy decoding: the G rollouts of a group are alike and μ_infer is a point mass the IS ratio cannot use; GRPO needs temperature > 0 (${DOC})`,
    });
    return issues;
  }
  if (topP < 1 && !sampling.allowTopPBias) {
    issues.push({
      path: '/rollout/topP',
      message: `rollout.topP ${topP} samples from a truncated distribution no trainer can score: every IS ratio would be biased low by the kept mass instead of measuring the train–inference mismatch; use topP 1, or set rollout.allowTopPBias: true to accept the bias (${DOC})`,
    });
  }
  if (T !== 1 && trainer && !trainerScoresAtTemperature(trainer.config)) {
    issues.push({
      path: '/rollout/temperature',
      message: `trainer endpoint '${trainer.name}' (type ${trainer.config.type}) scores π_train at temperature 1 only, so at rollout.temperature ${T} the IS ratio would measure the temperature, not the train–inference mismatch; use temperature 1 or a trainer that scores at the sampling temperature (the embedded trainer) (${DOC})`,
    });
  }
  const mode = inference && reportedLogprobsMode(inference.config);
  if (inference && (mode === 'raw_logits' || mode === 'processed_logits')) {
    issues.push({
      path: '/endpoints/inference',
      message: `inference endpoint '${inference.name}' declares logprobsMode ${mode}: it reports logits, not the sampling logprobs GRPO's IS ratio needs; run vLLM with --logprobs-mode processed_logprobs and declare it (${DOC})`,
    });
  } else if (inference && mode === 'raw_logprobs' && T !== 1) {
    issues.push({
      path: '/rollout/temperature',
      message: `inference endpoint '${inference.name}' declares logprobsMode raw_logprobs (vLLM's default): its logprobs are taken before temperature, so at rollout.temperature ${T} they are not μ_infer; run vLLM with --logprobs-mode processed_logprobs and set logprobsMode: processed_logprobs, or use temperature 1 (${DOC})`,
    });
  }
  return issues;
}
