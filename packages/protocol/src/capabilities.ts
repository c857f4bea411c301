// What a run kind needs from its trainer endpoint: the one table the control plane (at
// submission, via resolveRunSpec) and the worker (at run setup, via @anneal/engines
// `checkRunSupported`) both check, so a run is accepted or refused the same way everywhere.
import type { TrainerLoss } from './operator-config.ts';
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
