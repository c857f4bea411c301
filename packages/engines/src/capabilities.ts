// What a registered trainer endpoint can run (ARCHITECTURE.md "Engines"): run kinds, losses
// and how it reduces token losses. The control plane calls `checkRunSupported` at submission
// so a run its endpoint cannot do is rejected at once, not discovered hours later.
import type { LossFn, TrainerCapabilities } from './types.ts';

export type RunKind = TrainerCapabilities['kinds'][number];

/** Losses each run kind trains with; `eval` only samples. */
export const KIND_LOSSES: Readonly<Record<RunKind, readonly LossFn[]>> = {
  sft: ['cross_entropy'],
  rm: ['bradley_terry'],
  grpo: ['importance_sampling', 'ppo'],
  eval: [],
};

/** Hosted Tinker: no value head, sums token losses (TRAINER_API.md "Reduction"). */
export const TINKER_CAPABILITIES: TrainerCapabilities = {
  kinds: ['sft', 'grpo', 'eval'],
  losses: ['cross_entropy', 'importance_sampling', 'ppo'],
  reduction: 'sum',
};

/** SkyRL's Tinker server, FSDP/Megatron backends: sums like Tinker. */
export const SKYRL_FSDP_CAPABILITIES: TrainerCapabilities = { ...TINKER_CAPABILITIES };

/** SkyRL's Tinker server, JAX backend: averages token losses per sequence. */
export const SKYRL_JAX_CAPABILITIES: TrainerCapabilities = {
  ...TINKER_CAPABILITIES,
  reduction: 'mean_per_sequence',
};

const HINTS: Record<RunKind, string> = {
  rm: 'use the embedded trainer or another rm-capable backend',
  sft: 'register an endpoint that declares sft',
  grpo: 'register an endpoint that declares grpo',
  eval: 'register an endpoint that declares eval',
};

/**
 * Returns why `endpoint` cannot run `kind` (with `lossFn`, when the run names one), or
 * undefined when it can. Example: "trainer endpoint 'tinker-prod' cannot run kind 'rm': it
 * supports losses [cross_entropy, importance_sampling, ppo]; rm needs bradley_terry (use the
 * embedded trainer or another rm-capable backend)".
 */
export function checkRunSupported(
  capabilities: TrainerCapabilities,
  kind: RunKind,
  lossFn?: LossFn,
  endpoint = 'trainer',
): string | undefined {
  const kindLosses = KIND_LOSSES[kind];
  if (kindLosses === undefined) return `unknown run kind '${String(kind)}'`;
  if (lossFn !== undefined && !kindLosses.includes(lossFn)) {
    const allowed = kindLosses.length > 0 ? kindLosses.join(' or ') : 'no loss';
    return `run kind '${kind}' trains with ${allowed}, not '${lossFn}'`;
  }
  const head = `trainer endpoint '${endpoint}' cannot run kind '${kind}'`;
  const needed = lossFn !== undefined ? [lossFn] : kindLosses;
  const missingLoss = needed.length > 0 && !needed.some((l) => capabilities.losses.includes(l));
  if (missingLoss) {
    return (
      `${head}: it supports losses [${capabilities.losses.join(', ')}]; ${kind} needs ` +
      `${needed.join(' or ')} (${HINTS[kind]})`
    );
  }
  if (!capabilities.kinds.includes(kind)) {
    return `${head}: it declares kinds [${capabilities.kinds.join(', ')}] (${HINTS[kind]})`;
  }
  return undefined;
}
