// What a registered trainer endpoint can run (docs/architecture.md "Engines"): run kinds, losses
// and how it reduces token losses. Which losses each kind needs is one table in
// @anneal/protocol (`KIND_LOSSES`): the control plane checks it at submission (resolveRunSpec)
// and the worker at run setup (`checkRunSupported`, below), so both agree.
import { KIND_LOSSES, trainerCapabilityIssue } from '@anneal/protocol';
import type { TrainerCapabilities } from './types.ts';

export type RunKind = TrainerCapabilities['kinds'][number];
export { KIND_LOSSES };

/** Hosted Tinker: no value head, sums token losses (docs/engines.md "Reduction"). */
export const TINKER_CAPABILITIES: TrainerCapabilities = {
  kinds: ['sft', 'grpo', 'eval'],
  losses: ['cross_entropy', 'importance_sampling', 'ppo'],
  reduction: 'sum',
};

/** SkyRL's Tinker server, FSDP/Megatron backends: sums like Tinker. */
export const SKYRL_FSDP_CAPABILITIES: TrainerCapabilities = { ...TINKER_CAPABILITIES };

/** SkyRL's Tinker server, JAX backend: divides each datum's weighted token losses by the sum of
 * its weights and averages over datums (docs/engines.md "Reduction"). */
export const SKYRL_JAX_CAPABILITIES: TrainerCapabilities = {
  ...TINKER_CAPABILITIES,
  reduction: 'mean_per_sequence',
};

/**
 * Returns why `endpoint` cannot run `kind`, or undefined when it can (the protocol's check).
 * Example: "trainer endpoint 'tinker-prod' cannot run kind 'rm': it supports losses
 * [cross_entropy, importance_sampling, ppo]; rm needs bradley_terry (use the embedded trainer
 * or another rm-capable backend)".
 */
export function checkRunSupported(
  capabilities: TrainerCapabilities,
  kind: RunKind,
  endpoint = 'trainer',
): string | undefined {
  return trainerCapabilityIssue(capabilities, kind, endpoint);
}
