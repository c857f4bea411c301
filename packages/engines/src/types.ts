// The engine contracts every implementation honours: vLLM + Tinker-HTTP in production,
// the embedded ONNX sampler + TypeScript trainer on a laptop/CI. Workers only see these.
import type { TrainerBackend } from '@anneal/protocol';

/** Token ids as a caller holds them. Never given to JSON.stringify as they are (it writes an
 * Int32Array as an object): a wire body copies them (`[...ids]`) or writes their numbers. */
export type TokenIds = readonly number[] | Int32Array;

/** Token-in/token-out sampling request (docs/engines.md: token-id prompts, never text). */
export interface SampleRequest {
  /** Prompt token ids (a rollout's growing sequence passes its Int32Array). */
  prompt: TokenIds;
  /** Number of samples for this prompt (vLLM `n`). */
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** Sample k uses seed + k (vLLM semantics). */
  seed?: number;
  stopTokenIds?: readonly number[];
  /** Weights to sample from: a name returned by `InferenceEngine.loadWeights`; default = base. */
  model?: string;
  /** The engine's request priority, lower first (vLLM `priority` under
   * `--scheduling-policy priority`); engines without one ignore it. */
  priority?: number;
  /** false: the caller has no use for the sampling logprobs (reference rollouts), so an engine
   * whose reply carries them at a cost leaves them out (vLLM: ~60 of a completion's ~70 bytes a
   * token) and `logprobs` may come back null. Default true. */
  logprobs?: boolean;
}

export type FinishReason = 'stop' | 'length' | 'abort' | 'context_overflow';

/** Per-token values as an engine returns them: the vLLM client reads replies straight into
 * typed arrays (their bytes off V8's collected heap), other engines return arrays. Sampling
 * logprobs are float32 where vLLM computes them and wherever Anneal keeps them (rollouts, the
 * step's buffers, datums, the ledger), so the vLLM client reads them as float32 (a
 * Float32Array). */
export type TokenValues = readonly number[] | Float32Array;

export interface SampledSequence {
  /** Generated token ids (exact, as sampled). */
  tokens: TokenIds;
  /** Sampling log-probabilities of each generated token (same length as `tokens`); null only
   * when the request said `logprobs: false` and the engine left them out. */
  logprobs: TokenValues | null;
  finishReason: FinishReason;
}

/** A sampled sequence with its sampling logprobs (engines that always compute them). */
export type ScoredSequence = SampledSequence & { tokens: number[]; logprobs: number[] };

/** Reference to weights the sampler can load (Tinker `save_weights_for_sampler` result). */
export interface SamplerWeights {
  /** Name the sampler serves them under (LoRA adapter name for vLLM). */
  name: string;
  /** Where the weights are: `tinker://…`, a file path, or a shared-storage path. */
  path: string;
  /** `path` is a copy this worker downloaded for the server (hosted Tinker's export: the archive,
   * or the directory unpacked from it beside `<dir>.tar.gz`): an engine that unloads the weights
   * removes both. */
  downloaded?: boolean;
  /** `name` is a shared adapter's name, the same in every worker that serves it (a shared
   * reference, docs/operations.md "Shared references"): vLLM loads it under exactly that name,
   * and a load of the name this engine already serves from `path` changes nothing. */
  shared?: boolean;
}

/** How `releaseWeights` lets go of a name. */
export interface ReleaseOptions {
  /** Stop serving it here but leave it loaded on the server (a shared adapter that other
   * workers' runs still use). */
  keepLoaded?: boolean;
  /** A shared adapter's name: unloaded from every replica that lists it, even where this
   * engine never loaded it (its last user's worker is gone). */
  shared?: boolean;
}

export interface InferenceEngine {
  sample(request: SampleRequest, signal?: AbortSignal): Promise<SampledSequence[]>;
  /** Weight sync: make `weights` servable under `weights.name` (and reset caches). */
  loadWeights(weights: SamplerWeights): Promise<void>;
  /** Stop serving `name` and free what it holds (vLLM: unload the LoRA adapter). Unknown
   * names are fine. Optional: engines without per-name state need not implement it. */
  releaseWeights?(name: string, options?: ReleaseOptions): Promise<void>;
  close(): Promise<void>;
}

/** Tinker TensorData, in-process form. */
export type Tensor = Float32Array | Int32Array;

/** One training example (Tinker `Datum`): model input tokens + per-target-token inputs. */
export interface Datum {
  /** Input token ids (prompt + completion minus the last token, Tinker convention). */
  modelInput: TokenIds;
  /** Loss inputs keyed by name, each aligned with `modelInput` positions:
   * `target_tokens` (Int32Array), `weights`, `logprobs`, `advantages` (Float32Array). */
  lossFnInputs: Record<string, Tensor>;
}

/** Losses of docs/engines.md, plus `bradley_terry` for value-head reward models. */
export type LossFn = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'bradley_terry';

export interface LossFnConfig {
  clipLowThreshold?: number;
  clipHighThreshold?: number;
  /** Score π_train at this sampling temperature: log-softmax(logits / T) (default 1). Only the
   * embedded trainer honours it (docs/engines.md "Logprobs and temperature"). */
  temperature?: number;
}

export interface ForwardResult {
  /** Per datum: the trainer's logprobs of each target token (π_train), or scores for value heads. */
  logprobs: Float32Array[];
  /** Backend metrics with Tinker's `name:reduction` keys, e.g. `loss:sum`. */
  metrics: Record<string, number>;
}

export interface AdamParams {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Clip the global gradient norm to this value when > 0. */
  gradClipNorm: number;
}

export interface OptimStepResult {
  /** Global L2 gradient norm before clipping; null when the backend reports none. */
  gradNorm: number | null;
  metrics: Record<string, number>;
}

/** How a backend reduces token losses (docs/engines.md "Reduction"). */
export type LossReduction = 'sum' | 'mean_per_sequence';

export interface TrainerCapabilities {
  kinds: ReadonlyArray<'sft' | 'rm' | 'grpo' | 'eval'>;
  losses: readonly LossFn[];
  reduction: LossReduction;
  /** The server behind the endpoint, when declared (@anneal/protocol TRAINER_BACKEND_TRAITS:
   * sampler export kind, grad clipping); undefined = nothing backend-specific is assumed. */
  backend?: TrainerBackend;
}

export interface CreateModelOptions {
  baseModel: string;
  loraRank: number;
  seed?: number;
  /** `value` replaces the LM head with a scalar value head (reward models, docs/recipe.md §5). */
  head?: 'lm' | 'value';
}

/** What `TrainerModel.loadWeights` restores besides the weights. */
export interface LoadWeightsOptions {
  /** Also the checkpoint's optimizer state (a resume); false: a fresh optimizer (a fork). */
  optimizer: boolean;
}

/** A model being trained (a Tinker `model_id`). */
export interface TrainerModel {
  readonly id: string;
  forward(data: readonly Datum[], lossFn: LossFn, config?: LossFnConfig): Promise<ForwardResult>;
  forwardBackward(
    data: readonly Datum[],
    lossFn: LossFn,
    config?: LossFnConfig,
  ): Promise<ForwardResult>;
  optimStep(params: AdamParams): Promise<OptimStepResult>;
  /** Full training state (weights + optimizer) under `name`; returns its path. */
  saveWeights(name: string): Promise<string>;
  /**
   * Restore a `saveWeights` path (right after creation): its weights, and its optimizer state
   * (Adam moments and step count) only with `optimizer: true` — the tinker SDK's
   * `load_state_with_optimizer`, for a resume of the run that saved it. `optimizer: false` is
   * `load_state`: the weights only, the optimizer as created (moments 0, step 0), for a new run
   * starting from another run's checkpoint (docs/checkpoints.md "Forks").
   */
  loadWeights(path: string, options: LoadWeightsOptions): Promise<void>;
  /** Weights for the sampler (ONNX export for embedded, LoRA adapter for vLLM). */
  saveWeightsForSampler(name: string): Promise<SamplerWeights>;
  /** Delete a `saveWeightsForSampler` export the sampler no longer serves; resolves false
   * when it was already gone. Optional: backends without a delete route omit it. */
  deleteSamplerWeights?(path: string): Promise<boolean>;
  /** Delete a `saveWeights` checkpoint (checkpoint retention); resolves false when it was
   * already gone. Optional: backends without a delete route omit it. */
  deleteWeights?(path: string): Promise<boolean>;
  /** Frees what the model holds on the trainer (weights, optimizer state, gradients) once the
   * run is done with it; its saved checkpoints stay. Further calls on the model fail. Optional:
   * a backend without an unload route keeps the model until its session ends. */
  release?(): Promise<void>;
}

export interface TrainerEngine {
  readonly capabilities: TrainerCapabilities;
  createModel(options: CreateModelOptions): Promise<TrainerModel>;
  close(): Promise<void>;
}

/** Scores (prompt, response) token sequences with a value-head reward model (docs/recipe.md §5). */
export interface RewardScorer {
  /** Scalar score s(x, y) per pair. */
  score(pairs: ReadonlyArray<{ prompt: TokenIds; response: TokenIds }>): Promise<Float32Array>;
  close(): Promise<void>;
}

/** Text <-> token ids for one model. Rollouts stay token-in/token-out: tokenizers are only
 * used for text that enters the sequence from outside (prompts, tool outputs). */
export interface Tokenizer {
  encode(text: string): number[];
  decode(tokens: TokenIds): string;
  readonly eosTokenId: number;
  readonly vocabSize: number;
  /** Id of a special marker such as `<|call|>`, or undefined if the tokenizer has none. */
  specialTokenId(marker: string): number | undefined;
}
