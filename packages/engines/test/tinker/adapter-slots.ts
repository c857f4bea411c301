// What sampling a checkpoint through the trainer server's own sampler does to the models it
// trains, per backend (read at SkyRL a9564572e; the hosted service is closed):
//   - tinker: each sampling session samples its checkpoint; the training weights are untouched
//     (what tinker-cookbook's rl/train.py relies on when it samples lagged checkpoints while
//     training, and a base-model sampling client for its KL reference).
//   - skyrl-jax (skyrl/backends/jax.py load_sampler_weights / load_sampler_checkpoint): a model
//     has one adapter slot, the weights being trained. Unless the model's loaded_checkpoint_id is
//     the requested checkpoint, the checkpoint is loaded into that slot and marked loaded;
//     training does not clear the mark, so sampling the same checkpoint again after training
//     samples the trained weights. The base model is adapter 0 (lora_B zero).
//   - skyrl-fsdp (skyrl/backends/skyrl_train_backend.py sample / _sample_with_remote_client): the
//     request names the model id only, so any checkpoint of a model samples the weights last
//     synced by save_weights_for_sampler; an empty model id (the base model) is "unknown".
import type { FakeBackend } from './losses.ts';

export interface SlotState {
  /** Optimiser steps the training weights hold. */
  steps: number;
  loadedSampler: string | undefined;
  /** Steps of the weights last synced to the inference engines (skyrl-fsdp). */
  synced: number;
  unavailable: string | undefined;
  sampler: Map<string, number>;
}

/** A sampling request that replaced the weights a model trains (skyrl-jax only). */
export interface SlotOverwrite {
  modelId: string;
  checkpoint: string;
  /** Optimiser steps of the training weights before and after the load. */
  from: number;
  to: number;
}

/** The weights (optimiser steps) a sample gets, or the error its future fails with; `target`
 * undefined samples the base model. Records every load that replaced training weights. */
export function sampledWeights(
  backend: FakeBackend,
  target: { modelId: string; slot: SlotState; checkpoint: string } | undefined,
  overwrites: SlotOverwrite[],
): number | string {
  if (target === undefined) {
    return backend === 'skyrl-fsdp' ? "Sampling requested for unknown model_id(s): ['']" : 0;
  }
  const { modelId, slot, checkpoint } = target;
  const saved = slot.sampler.get(checkpoint) ?? 0;
  if (backend === 'tinker') return saved;
  if (slot.unavailable !== undefined) return `Model ${modelId} not loaded`;
  if (backend === 'skyrl-fsdp') return slot.synced;
  if (slot.loadedSampler !== checkpoint) {
    if (slot.steps !== saved) overwrites.push({ modelId, checkpoint, from: slot.steps, to: saved });
    slot.steps = saved;
    slot.loadedSampler = checkpoint;
  }
  return slot.steps;
}
