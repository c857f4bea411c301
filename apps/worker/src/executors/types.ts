// The seam between the worker runtime (queue, registry, cancel/drain, checkpoints, metrics
// endpoint) and the executors (what one run kind does per step). The runtime builds an
// ExecutorContext per run; an executor loops over steps and reports through it.
import type { InferenceEngine, RewardScorer, Tokenizer, TrainerEngine } from '@anneal/engines';
import type {
  ChatFormat,
  Rollout,
  RubricJudge,
  SearchBackend,
  SearchToolDescription,
  ToolCallMarkers,
} from '@anneal/envs';
import type {
  GuardrailFiring,
  GuardrailPolicy,
  LedgerConfig,
  PauseSource,
  RunKind,
  RunSpec,
  StepRecord,
  TrainerBackend,
} from '@anneal/protocol';
import type { DataCatalog } from '../resources/data/catalog.ts';

/** A run's `model` resolved by the runtime: the base model id and, for
 * `model: {checkpoint: {run}}`, that run's final checkpoint (training state, saveWeights). */
export interface ResolvedModel {
  /** Name in summaries and eval results (the source run id or the base model's name). */
  label: string;
  /** Base model id the trainer and sampler know (`createModel({baseModel})`), e.g. `embedded:tiny`. */
  baseModel: string;
  /** Tokenizer name when it differs from the base model id. */
  tokenizer?: string;
  /** Training-state path (`TrainerModel.saveWeights`) to start from; null = base weights. */
  checkpoint: string | null;
  /** Sampler weights (`saveWeightsForSampler` path) an eval may serve directly, without a trainer. */
  samplerPath?: string;
}

/** Reference rollouts shared by the runs of one process that use one shared reference
 * (executors/grpo/reference-cache.ts). */
export interface SharedReferenceRollouts {
  /** The seed of every run's reference rollouts (derived from the reference's id, so the same
   * on every worker). */
  seed: number;
  /** What decides a rollout besides its prompt and group size (sampling settings, tools). */
  settings: string;
  /** Rollouts by key (settings, group size, prompt tokens), oldest first. */
  groups: Map<string, Promise<Rollout[]>>;
  /** Entries kept at most: the oldest goes first. */
  maxGroups: number;
}

/** A GRPO run's shared reference (docs/operations.md "Shared references"; the runtime's side is
 * resources/shared-reference.ts). */
export interface SharedReference {
  /** Serves the shared reference, offering `path` (this run's export of its starting weights);
   * resolves with the adapter name its reference requests use. */
  serve(path: string): Promise<string>;
  /** Its reference rollouts as the runs of this process share them, for a run whose rollouts
   * are decided by `settings`; only after `serve`. */
  rollouts(settings: string): SharedReferenceRollouts;
}

/** Named, already-resolved resources a run may use (from the operator config). */
export interface RunResources {
  tokenizer: Tokenizer;
  /** Tool-call markers of the base model (`baseModels.<name>.toolFormat`); absent: the
   * format's defaults (the embedded byte tokenizer's special tokens). */
  toolMarkers?: ToolCallMarkers;
  /**
   * The base model's chat format for rollouts (docs/engines.md "Chat templates and tool calls"),
   * given the search_web limits of the run's tool: a chat template prints them in its tools
   * block. Absent: the marker format of `tokenizer` + `toolMarkers`.
   */
  chatFormat?: (tool: SearchToolDescription) => ChatFormat;
  inference: InferenceEngine;
  trainer: TrainerEngine;
  /** Where the weights start (`spec.model` resolved). */
  model: ResolvedModel;
  /** eval only: the checkpoints to evaluate, one step each; default `[model]`. */
  evalModels?: readonly ResolvedModel[];
  /** Set when the inference endpoint is the trainer's own sampler (`type: tinker`): the trainer
   * endpoint's declared backend, whose `checkpointSampling` trait decides how GRPO samples the
   * reference and older policy versions (@anneal/protocol sampler-pairing.ts). */
  ownSampler?: { backend: TrainerBackend | undefined };
  /** The shared reference on `inference` (docs/operations.md "Shared references"): set when the
   * run's demand names one; the executor offers its reference export to it instead of loading
   * the export under its own name. */
  sharedReference?: SharedReference;
  /** Frozen reference-model sampler (docs/recipe.md §4 length anchor) serving the reference weights as
   * its default model. Absent: the executor exports the starting weights into `inference`. */
  referenceInference?: InferenceEngine;
  /** Preference scorer for GRPO (docs/recipe.md §5); absent when the spec names no reward model. */
  rewardScorer?: RewardScorer;
  /** Datasets by source name; default: the built-in tasks (`defaultDataCatalog`, seed 0). */
  data?: DataCatalog;
  /** search_web backend (spec `endpoints.search`); absent: the data catalogue's corpus (with its
   * rendering options, e.g. one short result per call for the built-in tasks). */
  search?: SearchBackend;
  /** LLM judge for rubrics without a programmatic check (absent: such rubrics fail loudly). */
  judge?: RubricJudge;
  /** Context window of the policy model in tokens; rollouts never grow past it. Default: the
   * data catalogue's (256 for the built-in tasks), else unbounded (the engine reports overflow). */
  maxContextTokens?: number;
  /** Rollout-ledger caps (operator config `ledger`); absent: no ledger is written (contexts
   * without an artifact directory). */
  ledger?: LedgerConfig;
}

/** Each kind's spec: the member of the RunSpec union whose `kind` it is. */
type SpecByKind = { [K in RunKind]: Extract<RunSpec, { kind: K }> };

/** The spec of run kind K (`SpecOf<RunKind>` is any kind's: RunSpec). */
export type SpecOf<K extends RunKind> = SpecByKind[K];

/** What an executor of kind K runs with; `ExecutorContext` alone is any kind's. */
export interface ExecutorContext<K extends RunKind = RunKind> {
  runId: string;
  spec: SpecOf<K>;
  resources: RunResources;
  /** Resume point: the last checkpoint committed for this run, or null for a fresh start. */
  resumeFrom: { step: number; path: string } | null;
  /** The attempt running the run here (1 = first; a retry after a lost worker is the next). */
  attempt: number;
  /** Step records the run holds so far, from any attempt, by step: an executor without
   * checkpoints (eval) resumes after them (docs/evaluation.md "Resuming a killed eval"). */
  committedSteps(): Promise<StepRecord[]>;
  /** Directory where this run may write artifacts (checkpoints, exports). */
  artifactDir: string;
  /** Commits one step record; idempotent by step number (a repeat is ignored). `rollbacks`:
   * the rollbacks the run had taken when the step ran (docs/guardrails.md). */
  commitStep(
    step: number,
    metrics: Record<string, number | null>,
    rollbacks?: number,
  ): Promise<CommitOutcome>;
  /** Records a checkpoint (the resume pointer and its catalogue entry) after the trainer saved
   * state at `path` and, where the executor exported them, sampler weights at `samplerPath`. */
  recordCheckpoint(step: number, path: string, samplerPath?: string): Promise<void>;
  /** Retention (spec `checkpointRetention`): marks the checkpoints it no longer keeps deleted
   * in the catalogue and returns them, for the caller to delete on the trainer. Absent in
   * contexts with no store. */
  retireCheckpoints?(): Promise<RetiredCheckpoint[]>;
  /** Tells the run's owner something that does not stop the run (a `run:notice` event), e.g.
   * a requested setting the trainer backend does not apply. Absent in contexts with no store. */
  notice?(notice: { code: string; message: string }): Promise<void>;
  /**
   * Pauses the run (a guardrail rule, a budget cap; docs/api.md "Pausing a run"): `stopSignal`
   * fires, the step under way ends, the executor checkpoints and returns `stopped`, and the run
   * becomes `paused`, holding no slot until a resume queues it again. Resolves once the cause is
   * recorded; a pause asked for earlier keeps its own cause. On a run that is no longer this
   * worker's it does nothing (the run is stopped by the loss already).
   */
  pause(cause: { by: Exclude<PauseSource, 'user'>; reason: string }): Promise<void>;
  /** Becomes aborted when the run must stop at the next step boundary (cancel, pause, drain,
   * SIGTERM). */
  stopSignal: AbortSignal;
  /** The run's guardrails (training kinds); absent in contexts with no store. */
  guardrails?: GuardrailHooks;
}

/** A checkpoint a rollback may restore; `path` null: the run's starting weights (step 0). */
export interface RestorePoint {
  step: number;
  path: string | null;
}

/** The store side of a run's guardrails (docs/guardrails.md); the training loop drives them. */
export interface GuardrailHooks {
  policy: GuardrailPolicy;
  /** The run record's guardrail fields as this attempt started. */
  rollbacks: number;
  learningRateScale: number;
  safeCheckpoint: RestorePoint | null;
  /** Records the firings of one step once (`key`: `<rollbacks>:<step>`); `fired`: the metrics of a
   * step that fired a stop (never committed), whose usage is metered with the firings. */
  record(key: string, firings: GuardrailFiring[], fired?: StepRecord): Promise<void>;
  /** The last checkpoint at which no rule held. */
  markSafe(point: RestorePoint): Promise<void>;
  /** A `pause` rule fired: the run pauses at this step boundary (ExecutorContext.pause). */
  pause(reason: string): Promise<void>;
  /** Takes the run back to `firing.restored` as its rollback `firing.rollbacks`; false when the
   * run is no longer this attempt's (the loop stops at the boundary, as after a lost write). */
  rollback(input: {
    key: string;
    firing: GuardrailFiring & { restored: RestorePoint; rollbacks: number };
    fired: StepRecord;
  }): Promise<boolean>;
}

/** A checkpoint retention removed from the catalogue: its files are the caller's to delete. */
export interface RetiredCheckpoint {
  step: number;
  path: string;
  samplerPath?: string;
}

/** What a commit did: `committed` by this attempt; `duplicate`: the run already held the step
 * (an earlier attempt committed it); `refused`: the run is lost to this attempt or Redis lost
 * earlier steps (the run stops at the boundary). */
export type CommitOutcome = 'committed' | 'duplicate' | 'refused';

export interface ExecutorResult {
  /** Outcome-level numbers (final loss, accuracy…) stored on the run record. */
  summary: Record<string, number | string | null>;
  /** Checkpoint/weights path other runs can reference (`model: {checkpoint: {run}}`). */
  finalCheckpoint: string | null;
  /** true when the executor stopped early because `stopSignal` fired. */
  stopped: boolean;
}

/** Runs one kind: the compiler checks it reads only fields its own kind's spec has. */
export type Executor<K extends RunKind = RunKind> = (
  ctx: ExecutorContext<K>,
) => Promise<ExecutorResult>;

/** An executor for every kind, each typed by its kind (`EXECUTORS`). */
export type ExecutorRegistry = { readonly [K in RunKind]: Executor<K> };

/** The executors a worker runs: some kinds (tests, single-kind workers) or all. */
export type ExecutorTable = Partial<ExecutorRegistry>;

/**
 * The executor for `kind`, typed by it: the one place a run's kind picks its executor. Given
 * a context whose `spec.kind` is `kind`, `executorFor(table, ctx.spec.kind)?.(ctx)` hands each
 * executor its own kind's spec (a mapped type indexed by K, so no cast narrows it).
 */
export function executorFor<K extends RunKind>(
  table: ExecutorTable,
  kind: K,
): Executor<K> | undefined {
  return table[kind];
}
