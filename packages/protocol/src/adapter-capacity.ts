// Adapter capacity as a scheduled resource (docs/operations.md "Adapter capacity"): what a run
// holds on each endpoint it uses (its demand, computed once at submission and kept on the run
// record) and what each endpoint holds (its capacity, declared in the operator config). The
// start script (packages/store scripts.ts) admits a run only when its demand fits.
import { Type, type Static } from '@sinclair/typebox';
import type { OperatorConfig } from './operator-config.ts';
import type { ResolvedRunSpec } from './resolve.ts';

/** A shared reference's id: `ref-` and 64 random bits (hex), drawn once per (tenant, starting
 * checkpoint) and kept in Redis, so nobody can guess another tenant's reference adapter. */
export const SHARED_REFERENCE_PATTERN = '^ref-[0-9a-f]{16}$';

export const ADAPTER_ROLES = ['inference', 'trainer'] as const;
export type AdapterRole = (typeof ADAPTER_ROLES)[number];

/** One endpoint's share of a run's demand. */
export const AdapterDemand = Type.Object(
  {
    role: Type.Union(
      ADAPTER_ROLES.map((r) => Type.Literal(r)),
      {
        description:
          'inference: vLLM LoRA slots; trainer: model slots of a Tinker-compatible trainer.',
      },
    ),
    endpoint: Type.String({ description: 'The operator-registered endpoint name.' }),
    slots: Type.Integer({ minimum: 1, description: 'Adapters (or trainer models) held at once.' }),
    detail: Type.String({
      description: 'What the slots are, e.g. "reference 1 + policy versions 3 + sync 1".',
    }),
    reference: Type.Optional(
      Type.String({
        pattern: SHARED_REFERENCE_PATTERN,
        description:
          'The shared frozen reference this run scores against on the endpoint: one adapter per starting checkpoint and tenant, loaded once and counted once however many runs use it (docs/operations.md "Shared references"). Its slot is in `slots`; a run admitted while another holds the reference needs one slot fewer.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type AdapterDemand = Static<typeof AdapterDemand>;

/** One endpoint's declared capacity. */
export interface AdapterCapacity {
  role: AdapterRole;
  endpoint: string;
  /** Slots runs may hold at once (vLLM `--max-loras`; SkyRL tx `max_lora_adapters`). */
  slots: number;
  /** Admit runs past `slots` (they then share the batch slots and wait on one another). */
  oversubscribe: boolean;
}

/**
 * What `spec` holds at once on each endpoint that has a notion of adapter slots (a vLLM
 * inference endpoint; a `type: tinker` trainer):
 * - grpo on vLLM: its frozen reference (1), `maxPolicyLag + 1` policy versions (the current one
 *   and the k older ones still finishing rollouts), and 1 more while a sync loads the next
 *   version before the oldest is unloaded; with `sharedReference` (sharedReferenceKey) the
 *   reference is that shared adapter, whose slot the admission script counts once for all its
 *   runs;
 * - eval on vLLM: one adapter per evaluated model (all stay loaded until the run ends);
 * - a training run on a tinker trainer: its trained model, and for grpo a second model the
 *   reference is exported from when it resumes.
 * Hosted Tinker and embedded engines have no declared slots and get no demand.
 */
export function runAdapterDemand(
  spec: ResolvedRunSpec,
  operator: OperatorConfig,
  sharedReference?: string,
): AdapterDemand[] {
  const demand: AdapterDemand[] = [];
  const inference = spec.endpoints.inference;
  if (inference !== undefined && operator.inference[inference]?.type === 'vllm') {
    if (spec.kind === 'grpo') {
      const versions = spec.rollout.maxPolicyLag + 1;
      demand.push({
        role: 'inference',
        endpoint: inference,
        slots: 1 + versions + 1,
        detail: `${sharedReference === undefined ? 'reference 1' : 'shared reference 1'} + policy versions ${versions} (maxPolicyLag + 1) + sync 1`,
        ...(sharedReference !== undefined && { reference: sharedReference }),
      });
    } else if (spec.kind === 'eval') {
      const models = spec.models?.length ?? 1;
      demand.push({
        role: 'inference',
        endpoint: inference,
        slots: models,
        detail: `evaluated models ${models}`,
      });
    }
  }
  const trainer = spec.endpoints.trainer;
  const trainerConfig = trainer === undefined ? undefined : operator.trainers[trainer];
  if (
    trainer !== undefined &&
    trainerConfig?.type === 'tinker' &&
    trainerConfig.backend !== 'tinker' &&
    spec.kind !== 'eval'
  ) {
    demand.push({
      role: 'trainer',
      endpoint: trainer,
      slots: spec.kind === 'grpo' ? 2 : 1,
      detail: spec.kind === 'grpo' ? 'policy 1 + reference export 1' : 'trained model 1',
    });
  }
  return demand;
}

/** Every endpoint whose capacity the operator declared. */
export function adapterCapacities(operator: OperatorConfig): AdapterCapacity[] {
  const capacities: AdapterCapacity[] = [];
  for (const [endpoint, config] of Object.entries(operator.inference)) {
    if (config.type === 'vllm' && config.maxLoras !== undefined) {
      capacities.push({
        role: 'inference',
        endpoint,
        slots: config.maxLoras,
        oversubscribe: config.oversubscribe === true,
      });
    }
  }
  for (const [endpoint, config] of Object.entries(operator.trainers)) {
    if (config.type === 'tinker' && config.maxModels !== undefined) {
      capacities.push({
        role: 'trainer',
        endpoint,
        slots: config.maxModels,
        oversubscribe: config.oversubscribe === true,
      });
    }
  }
  return capacities;
}

/** Why a run with `demand` could never start (more slots than an endpoint has, without
 * oversubscription), one message per endpoint; empty when every demand can fit. */
export function adapterDemandIssues(
  demand: readonly AdapterDemand[],
  operator: OperatorConfig,
): Array<{ path: string; message: string }> {
  const capacities = adapterCapacities(operator);
  return demand.flatMap((d) => {
    const capacity = capacities.find((c) => c.role === d.role && c.endpoint === d.endpoint);
    if (capacity === undefined || capacity.oversubscribe || d.slots <= capacity.slots) return [];
    const field = d.role === 'inference' ? 'maxLoras' : 'maxModels';
    return [
      {
        path: d.role === 'inference' ? '/endpoints/inference' : '/endpoints/trainer',
        message:
          `${d.role} endpoint '${d.endpoint}' holds ${capacity.slots} adapter slots (${field}) ` +
          `and this run needs ${d.slots} at once (${d.detail}): lower rollout.maxPolicyLag or ` +
          'the number of models, or use another endpoint',
      },
    ];
  });
}

/** What decides a GRPO run's frozen reference weights, as a string: runs with the same key (and
 * tenant) on one inference endpoint score against the same reference and share one adapter
 * (docs/operations.md "Shared references"). The reference is the run's starting weights: a
 * registered base model, or a checkpoint at an explicit step, exported by the same trainer
 * endpoint at the same LoRA rank. Undefined where it is not shared: other kinds, endpoints
 * without adapter slots, `checkpoint` without `step` (its final checkpoint may still move), and
 * hosted Tinker trainers. */
export function sharedReferenceKey(
  spec: ResolvedRunSpec,
  operator: OperatorConfig,
): string | undefined {
  if (spec.kind !== 'grpo') return undefined;
  const inference = spec.endpoints.inference;
  if (inference === undefined || operator.inference[inference]?.type !== 'vllm') return undefined;
  // Hosted Tinker's exports are downloaded by each worker to a path of its own: not one file
  // every worker can load the shared name from.
  const trainer =
    spec.endpoints.trainer === undefined ? undefined : operator.trainers[spec.endpoints.trainer];
  if (trainer?.type === 'tinker' && trainer.backend === 'tinker') return undefined;
  const model = spec.model;
  const start =
    model?.base !== undefined
      ? { base: model.base }
      : model?.checkpoint?.step !== undefined
        ? { run: model.checkpoint.run, step: model.checkpoint.step }
        : undefined;
  if (start === undefined) return undefined;
  return JSON.stringify({
    ...start,
    trainer: spec.endpoints.trainer ?? null,
    rank: spec.lora.rank,
  });
}
