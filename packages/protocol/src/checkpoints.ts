// A run's checkpoint catalogue (GET /v1/runs/{id}/checkpoints), its retention policy (spec
// `checkpointRetention`, operator `defaults.checkpointRetention`) and the pure rule that picks
// which checkpoints a policy keeps. Stores and workers apply the rule; this file only decides.
import { Type, type Static } from '@sinclair/typebox';
import { SPEC_METRIC_PATTERN } from './names.ts';
import { WireStepMetrics } from './step-record.ts';

export const KeepBest = Type.Object(
  {
    metric: Type.String({
      pattern: SPEC_METRIC_PATTERN,
      description:
        "A step-record key of the run's kind (docs/metrics.md), e.g. `reward/all` or `loss`.",
    }),
    order: Type.Union([Type.Literal('max'), Type.Literal('min')], {
      default: 'max',
      description: '`max`: higher is better; `min`: lower is better.',
    }),
    count: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 1,
      description: 'How many to keep.',
    }),
  },
  {
    additionalProperties: false,
    description: 'Keep the best `count` checkpoints by a step metric.',
  },
);
export type KeepBest = Static<typeof KeepBest>;

/** Which checkpoints a run keeps; each rule adds to what is kept, none removes. Nothing set:
 * every checkpoint is kept. */
export const CheckpointRetention = Type.Object(
  {
    keepLast: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100_000, description: 'Keep the newest N.' }),
    ),
    keepEvery: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: 'Keep every checkpoint whose step is a multiple of N.',
      }),
    ),
    keepBest: Type.Optional(KeepBest),
  },
  {
    additionalProperties: false,
    description:
      'Checkpoint retention: the latest checkpoint, protected ones and any a queued run starts from are always kept. Unset fields take the operator defaults (`defaults.checkpointRetention`); none set anywhere: keep all.',
  },
);
export type CheckpointRetention = Static<typeof CheckpointRetention>;

/** A protection on a checkpoint: retention never deletes it while any owner holds one. */
export const CheckpointProtection = Type.Object(
  {
    owner: Type.String({ description: 'Who protects it, e.g. `guard` or `user`.' }),
    reason: Type.String(),
    at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type CheckpointProtection = Static<typeof CheckpointProtection>;

export const CheckpointEntry = Type.Object(
  {
    step: Type.Integer({ minimum: 0 }),
    at: Type.String({ format: 'date-time', description: 'When the checkpoint was recorded.' }),
    path: Type.String({ description: 'Training state (weights + optimizer) on the trainer.' }),
    samplerPath: Type.Optional(
      Type.String({ description: 'Sampler export of the same weights (what `export` writes).' }),
    ),
    status: Type.Union([Type.Literal('kept'), Type.Literal('deleted')]),
    deletedAt: Type.Optional(Type.String({ format: 'date-time' })),
    latest: Type.Boolean({ description: 'The resume point: a retried run starts from it.' }),
    protections: Type.Array(CheckpointProtection),
    usedBy: Type.Array(Type.String(), {
      description: 'Runs that start from this checkpoint (`model.checkpoint: {run, step}`).',
    }),
    metrics: Type.Union([WireStepMetrics, Type.Null()], {
      description: "The step's committed record (null when Redis no longer holds it).",
    }),
  },
  { additionalProperties: false },
);
export type CheckpointEntry = Static<typeof CheckpointEntry>;

export const CheckpointSummary = Type.Object(
  {
    latest: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'The resume point (null: the run has not checkpointed).',
    }),
    kept: Type.Integer({ minimum: 0, description: 'How many checkpoints are kept.' }),
    deleted: Type.Object(
      {
        count: Type.Integer({ minimum: 0 }),
        firstStep: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
        lastStep: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
      },
      {
        additionalProperties: false,
        description:
          'Checkpoints retention deleted, summarised (list them with `status=deleted`): how many, the oldest and newest step.',
      },
    ),
  },
  { additionalProperties: false },
);
export type CheckpointSummary = Static<typeof CheckpointSummary>;

export const CheckpointList = Type.Object(
  {
    runId: Type.String(),
    retention: CheckpointRetention,
    summary: CheckpointSummary,
    checkpoints: Type.Array(CheckpointEntry, {
      description: 'One page, in the requested step order (`order`, default oldest first).',
    }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` (with the same other parameters) for the next page.',
    }),
  },
  { additionalProperties: false },
);
export type CheckpointList = Static<typeof CheckpointList>;

/** The parent of a forked run: the run and step its weights start from. */
export const RunParent = Type.Object(
  { run: Type.String(), step: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type RunParent = Static<typeof RunParent>;

/** The spec's retention over the operator defaults, field by field. */
export function mergeRetention(
  spec: CheckpointRetention | undefined,
  defaults: CheckpointRetention | undefined,
): CheckpointRetention {
  return { ...defaults, ...spec };
}

export interface RetentionCandidate {
  step: number;
  /** The keepBest metric's value at this step (null/undefined: not ranked). */
  score?: number | null;
}

/**
 * Steps a policy no longer keeps, oldest first. `candidates` are the kept checkpoints; `always`
 * are steps kept whatever the policy (the latest, protected, used by a queued run). A policy with
 * no rule keeps everything.
 */
export function stepsToDrop(
  candidates: readonly RetentionCandidate[],
  policy: CheckpointRetention,
  always: ReadonlySet<number>,
): number[] {
  const { keepLast, keepEvery, keepBest } = policy;
  if (keepLast === undefined && keepEvery === undefined && keepBest === undefined) return [];
  const byStep = [...candidates].sort((a, b) => a.step - b.step);
  const keep = new Set(always);
  if (keepLast !== undefined) for (const c of byStep.slice(-keepLast)) keep.add(c.step);
  if (keepEvery !== undefined) {
    for (const c of byStep) if (c.step % keepEvery === 0) keep.add(c.step);
  }
  if (keepBest !== undefined) {
    const sign = keepBest.order === 'min' ? 1 : -1;
    const ranked = byStep
      .filter((c): c is RetentionCandidate & { score: number } => Number.isFinite(c.score))
      // best first; ties go to the later step (the more trained weights)
      .sort((a, b) => sign * (a.score - b.score) || b.step - a.step);
    for (const c of ranked.slice(0, keepBest.count)) keep.add(c.step);
  }
  return byStep.filter((c) => !keep.has(c.step)).map((c) => c.step);
}

/** `manifest.json` of an export (GET /v1/runs/{id}/checkpoints/{step}/export, `anneal runs
 * export`): what the weights are and where they came from. */
export const ExportManifest = Type.Object(
  {
    format: Type.Literal('anneal-export/v1'),
    run: Type.Object({
      id: Type.String(),
      kind: Type.String(),
      name: Type.Optional(Type.String()),
    }),
    step: Type.Integer({ minimum: 0 }),
    checkpointAt: Type.String({ format: 'date-time' }),
    exportedAt: Type.String({ format: 'date-time' }),
    baseModel: Type.Object(
      { name: Type.String(), model: Type.String() },
      { description: 'The registered base model the weights descend from, and its model id.' },
    ),
    parent: Type.Optional(RunParent),
    specSha256: Type.String({ description: "SHA-256 of the run's resolved spec, canonical JSON." }),
    metrics: Type.Union([WireStepMetrics, Type.Null()]),
    weights: Type.Object({
      format: Type.Union([Type.Literal('onnx'), Type.Literal('peft-lora')], {
        description:
          '`onnx`: the embedded model (model.onnx, decoder.onnx); `peft-lora`: adapter_model.safetensors + adapter_config.json.',
      }),
      files: Type.Array(Type.String()),
      trainer: Type.String({ description: 'Trainer endpoint that saved them.' }),
      samplerPath: Type.String(),
    }),
  },
  { additionalProperties: false },
);
export type ExportManifest = Static<typeof ExportManifest>;

export const EXPORT_MANIFEST_FILE = 'manifest.json';
