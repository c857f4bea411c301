// GRPO samples three kinds of weights: the current policy, older policy versions (pipelined
// GRPO, rollout.maxPolicyLag ≥ 1) and the frozen reference (docs/recipe.md §4.4). When the
// inference endpoint is the trainer's own sampler (`type: tinker`), what the server does with a
// sampled checkpoint decides which of them it can serve (TRAINER_BACKEND_TRAITS
// `checkpointSampling`, docs/engines.md "Conformance"). The control plane refuses a pairing it
// cannot serve at submission (resolveRunSpec) and the worker at run set-up, with this message.
import {
  TRAINER_BACKEND_TRAITS,
  type TrainerBackend,
  type TrainerBackendTraits,
} from './capabilities.ts';
import type { VllmServer } from './operator-config.ts';

export interface OwnSamplerPairing {
  backend: TrainerBackend;
  trainer: string;
  inference: string;
  maxPolicyLag: number;
}

export interface PairingIssue {
  path: string;
  message: string;
}

const DOC = 'docs/engines.md "Conformance"';

/** Why a GRPO run cannot sample through its trainer's own sampler, or undefined when it can.
 * A `loads-into-training-slot` backend serves the current policy (its export equals the weights
 * in the slot) and a reference opened as a model of its own (the worker does that), but not an
 * older version: loading one would replace the weights being trained. A `latest-synced` backend
 * serving one model can serve neither the reference nor an older version. */
export function ownSamplerIssue(pairing: OwnSamplerPairing): PairingIssue | undefined {
  const { backend, trainer, inference, maxPolicyLag } = pairing;
  const traits = TRAINER_BACKEND_TRAITS[backend];
  const head = `inference endpoint '${inference}' samples through trainer endpoint '${trainer}' (backend ${backend})`;
  if (traits.checkpointSampling === 'latest-synced') {
    return {
      path: '/endpoints/inference',
      message:
        `${head}, whose sampler ignores the checkpoint asked for and samples the model's latest ` +
        `synced weights, and which trains one model only${traits.samplesBaseModel ? '' : ' and cannot sample the base model'}: ` +
        'the reference rollouts and older policy versions would come from the current policy. ' +
        'Sample from a vLLM inference endpoint with a trainer of backend skyrl-jax or tinker ' +
        `(${DOC})`,
    };
  }
  if (traits.checkpointSampling === 'loads-into-training-slot' && maxPolicyLag > 0) {
    return {
      path: '/rollout/maxPolicyLag',
      message:
        `${head}, whose sampler loads a sampled checkpoint into the adapter slot being trained: ` +
        `rollouts of an older policy version (rollout.maxPolicyLag ${maxPolicyLag}) would ` +
        'overwrite the weights in training with that version. Set rollout.maxPolicyLag 0, or ' +
        `sample from a vLLM inference endpoint (${DOC})`,
    };
  }
  return undefined;
}

/** Whether the worker must open the reference as a model of its own rather than export the
 * policy's starting weights: sampling an export of the policy would load it into the policy's
 * adapter slot. */
export function referenceNeedsOwnModel(backend: TrainerBackend | undefined): boolean {
  return (
    backend !== undefined &&
    TRAINER_BACKEND_TRAITS[backend].checkpointSampling === 'loads-into-training-slot'
  );
}

export interface VllmPairing {
  backend: TrainerBackend;
  trainer: string;
  inference: string;
}

/**
 * Why a GRPO run cannot sample from vLLM endpoint `inference` with trainer endpoint `trainer`,
 * or undefined when it can. SkyRL FSDP's sampler export is a PEFT LoRA adapter vLLM could load,
 * but its `save_weights_for_sampler` first starts SkyRL's own colocated inference engines and
 * broadcasts the policy into them (skyrl_train_backend.py `save_sampler_checkpoint`): every sync
 * would run a second inference stack on the trainer's GPUs that the run never samples.
 */
export function vllmPairingIssue(pairing: VllmPairing): string | undefined {
  const { backend, trainer, inference } = pairing;
  if (TRAINER_BACKEND_TRAITS[backend].samplerSync !== 'colocated-engines') return undefined;
  return (
    `trainer endpoint '${trainer}' (backend ${backend}) cannot feed inference endpoint ` +
    `'${inference}': its save_weights_for_sampler starts ${backend}'s own colocated inference ` +
    'engines and broadcasts the policy into them before writing the adapter, so every weight ' +
    "sync would run a second inference stack on the trainer's GPUs that this run never " +
    'samples (its exports are LoRA adapters vLLM could load). Use a trainer backend whose ' +
    `sampler export is the adapter alone (skyrl-jax or tinker) (${DOC})`
  );
}

export interface SamplerServerPairing {
  /** What answers on the vLLM endpoint's replicas (its operator-config `server`). */
  server: VllmServer;
  inference: string;
  trainer: string;
  /** What the trainer's `save_weights_for_sampler` writes (TRAINER_BACKEND_TRAITS
   * `samplerExport`; a `type: embedded` trainer: onnx); undefined when no backend is declared. */
  exportFormat: TrainerBackendTraits['samplerExport'] | undefined;
}

const EMBEDDED_DOC = 'docs/engines.md "Embedded sampler server"';

/** Why a run cannot sample the trainer's exports from vLLM endpoint `inference`, or undefined
 * when it can: vLLM loads LoRA adapters, not the embedded trainer's ONNX weight sets; the
 * embedded sampler server (`anneal serve sampler`, server: anneal-embedded) loads those alone. */
export function samplerServerIssue(pairing: SamplerServerPairing): string | undefined {
  const { server, inference, trainer, exportFormat } = pairing;
  if (server === 'vllm') {
    if (exportFormat !== 'onnx') return undefined;
    return (
      `trainer endpoint '${trainer}' exports the embedded model's ONNX weight sets, which vLLM ` +
      `cannot load as LoRA adapters: serve them with \`anneal serve sampler\` and declare ` +
      `inference endpoint '${inference}' with server: anneal-embedded (${EMBEDDED_DOC})`
    );
  }
  if (exportFormat === 'onnx') return undefined;
  const what =
    exportFormat === undefined
      ? 'declares no backend (declare backend: embedded when it is `anneal serve trainer`)'
      : `exports ${exportFormat === 'full' ? 'full models' : 'LoRA adapters'}`;
  return (
    `inference endpoint '${inference}' is the embedded sampler (server: anneal-embedded), which ` +
    `loads only the embedded trainer's ONNX sampler exports, and trainer endpoint '${trainer}' ` +
    `${what} (${EMBEDDED_DOC})`
  );
}
