// The seam between the worker runtime (queue, registry, cancel/drain, checkpoints, metrics
// endpoint) and the executors (what one run kind does per step). The runtime builds an
// ExecutorContext per run; an executor loops over steps and reports through it.
import type { InferenceEngine, RewardScorer, Tokenizer, TrainerEngine } from '@anneal/engines';
import type { SearchBackend } from '@anneal/envs';
import type { RunSpec } from '@anneal/protocol';

/** A run's starting weights, resolved by the runtime from `spec.model` + the operator config. */
export interface ResolvedModel {
  /** Engine model id to create/load, e.g. `embedded:tiny` or `Qwen/Qwen3-8B`. */
  baseModel: string;
  /** Tokenizer name from the operator config (`baseModels.<name>.tokenizer`), if set. */
  tokenizer?: string;
  /** `model: {checkpoint: {run}}`: that run's final checkpoint path (load it after createModel). */
  checkpoint: string | null;
}

/** Named, already-resolved resources a run may use (from the operator config). */
export interface RunResources {
  tokenizer: Tokenizer;
  inference: InferenceEngine;
  trainer: TrainerEngine;
  /** Frozen reference-model sampler (RECIPE §4 length anchor); defaults to `inference`. */
  referenceInference?: InferenceEngine;
  /** Preference scorer for GRPO (RECIPE §5); absent when the spec names no reward model. */
  rewardScorer?: RewardScorer;
  /** Starting weights (added by the runtime; absent only in hand-built test resources). */
  model?: ResolvedModel;
  /** The spec's named search backend; absent = the built-in tasks' local corpus. */
  search?: SearchBackend;
}

export interface ExecutorContext {
  runId: string;
  spec: RunSpec;
  resources: RunResources;
  /** Resume point: the last checkpoint committed for this run, or null for a fresh start. */
  resumeFrom: { step: number; path: string } | null;
  /** Directory where this run may write artifacts (checkpoints, exports). */
  artifactDir: string;
  /** Commits one step record; idempotent by step number (a repeat is ignored). */
  commitStep(step: number, metrics: Record<string, number | null>): Promise<void>;
  /** Records a checkpoint pointer after the trainer saved state at `path`. */
  recordCheckpoint(step: number, path: string): Promise<void>;
  /** Becomes aborted when the run must stop at the next step boundary (cancel, drain, SIGTERM). */
  stopSignal: AbortSignal;
}

export interface ExecutorResult {
  /** Outcome-level numbers (final loss, accuracy…) stored on the run record. */
  summary: Record<string, number | string | null>;
  /** Checkpoint/weights path other runs can reference (`model: {checkpoint: {run}}`). */
  finalCheckpoint: string | null;
  /** true when the executor stopped early because `stopSignal` fired. */
  stopped: boolean;
}

export type Executor = (ctx: ExecutorContext) => Promise<ExecutorResult>;
