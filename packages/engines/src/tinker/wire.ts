// Wire format of the Tinker-compatible training API (docs/engines.md): the snake_case JSON
// bodies of every request and response under `/api/v1`. Shared by the HTTP client
// (src/tinker/) and Anneal's embedded trainer server, so both speak exactly this.
// JSON only: never `Accept: application/x-protobuf`. Auth header: `X-API-Key`.
// Facts read from SkyRL's Tinker server (tinker SDK <= 0.24.1).
//
// Anneal extensions (absent from Tinker; only the embedded trainer serves them):
// `CreateModelRequest.head: 'value'`, loss `bradley_terry`, `AdamParams.grad_clip_norm`,
// and `LossFnOutput.scores` (value-head outputs). Clients send them only when asked to.

/** Prefix of every route. */
export const TINKER_API_PREFIX = '/api/v1';

/** Route names (POST unless noted), appended to `TINKER_API_PREFIX + '/'`. */
export const TINKER_ROUTES = {
  healthz: 'healthz', // GET
  createSession: 'create_session',
  sessionHeartbeat: 'session_heartbeat',
  createModel: 'create_model',
  getInfo: 'get_info',
  forwardBackward: 'forward_backward',
  forward: 'forward',
  optimStep: 'optim_step',
  saveWeights: 'save_weights',
  loadWeights: 'load_weights',
  saveWeightsForSampler: 'save_weights_for_sampler',
  createSamplingSession: 'create_sampling_session',
  asample: 'asample',
  retrieveFuture: 'retrieve_future',
  /** Frees a model's weights on the server (tinker SDK AsyncModelsResource.unload; a backend
   * without it answers 404). */
  unloadModel: 'unload_model',
} as const;

/** REST routes of checkpoints (GET archive, DELETE checkpoint), under `TINKER_API_PREFIX + '/'`.
 * `checkpointId` is `sampler_weights/<name>` for hosted Tinker; SkyRL's archive route takes the
 * bare `<name>` (its delete route takes both). */
export const checkpointRoute = (modelId: string, checkpointId: string): string =>
  `training_runs/${encodeURIComponent(modelId)}/checkpoints/${checkpointId
    .split('/')
    .map(encodeURIComponent)
    .join('/')}`;

/** Checkpoint names accepted by `save_weights` / `save_weights_for_sampler`. */
export const CHECKPOINT_NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;

/** A sampler-weights path: SkyRL's `tinker://<model_id>/<name>` or hosted Tinker's
 * `tinker://<model_id>/sampler_weights/<name>`; undefined for anything else. */
export function parseSamplerPath(path: string): { modelId: string; name: string } | undefined {
  const match = /^tinker:\/\/([^/]+)\/(?:sampler_weights\/)?([^/]+)$/.exec(path);
  if (!match || match[1] === 'weights') return undefined;
  const [, modelId, name] = match as unknown as [string, string, string];
  return CHECKPOINT_NAME_PATTERN.test(modelId) && CHECKPOINT_NAME_PATTERN.test(name)
    ? { modelId, name }
    : undefined;
}

/** A training-checkpoint path, `tinker://<model_id>/weights/<name>`; undefined otherwise. */
export function parseWeightsPath(path: string): { modelId: string; name: string } | undefined {
  const match = /^tinker:\/\/([^/]+)\/weights\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  const [, modelId, name] = match as unknown as [string, string, string];
  return CHECKPOINT_NAME_PATTERN.test(modelId) && CHECKPOINT_NAME_PATTERN.test(name)
    ? { modelId, name }
    : undefined;
}

// ---------------------------------------------------------------- shared types

/** One chunk of model input; Anneal only uses token chunks. */
export interface EncodedTextChunk {
  type: 'encoded_text';
  tokens: number[];
}

export interface ModelInput {
  chunks: EncodedTextChunk[];
}

export type TensorDtype = 'int64' | 'float32';

export interface TensorData {
  data: number[];
  dtype: TensorDtype;
  shape?: number[];
}

/** Loss inputs: `target_tokens` (int64), `weights`, `logprobs`, `advantages` (float32). */
export interface Datum {
  model_input: ModelInput;
  loss_fn_inputs: Record<string, TensorData>;
}

export type WireLossFn = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'bradley_terry';

/** `ppo` takes `{clip_low_threshold, clip_high_threshold}`. */
export type LossFnConfig = Record<string, number>;

export interface LoraConfig {
  rank: number;
  seed?: number;
  /** Which layers get LoRA (tinker SDK types/lora_config.py: all default true, the unembedding
   * included; SkyRL ignores them and adapts attention and MLP). */
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}

export interface AdamParams {
  learning_rate: number; // default 1e-4
  beta1: number; // default 0.9
  beta2: number; // default 0.95
  eps: number; // default 1e-12
  weight_decay: number; // default 0
  /** Anneal extension: clip the global gradient norm when > 0. */
  grad_clip_norm?: number;
}

/** Metric keys carry one `:` and a reduction suffix (`loss:sum`), or none (`skyrl.ai/grad_norm`). */
export type Metrics = Record<string, number>;

// ---------------------------------------------------------------- sessions + models

export interface HealthzResponse {
  status: 'ok';
}

export interface CreateSessionRequest {
  tags: string[];
  sdk_version: string;
  user_metadata?: Record<string, unknown>;
}

export interface CreateSessionResponse {
  session_id: string;
  type: 'create_session';
  info_message?: string | null;
  warning_message?: string | null;
  error_message?: string | null;
}

export interface SessionHeartbeatRequest {
  session_id: string;
}

/** 200 with any body; 404 when the session is unknown. */
export interface SessionHeartbeatResponse {
  type?: 'session_heartbeat';
}

export interface CreateModelRequest {
  session_id: string;
  base_model: string;
  lora_config: LoraConfig;
  model_role: 'policy';
  /** Per-session counter of create_model calls; required by hosted Tinker (SDK
   * types/create_model_request.py), ignored by SkyRL. */
  model_seq_id?: number;
  /** Anneal extension: `value` = scalar value head (reward models). Omitted means `lm`. */
  head?: 'lm' | 'value';
}

export interface CreateModelResponse {
  model_id: string;
  base_model: string;
  lora_config: LoraConfig;
  status: 'created';
  request_id: string;
}

export interface GetInfoRequest {
  model_id: string;
}

/** `unload_model`: answered with a future whose result is `UnloadModelResponse`. */
export interface UnloadModelRequest {
  model_id: string;
  type: 'unload_model';
}

export interface UnloadModelResponse {
  model_id: string;
  type: 'unload_model';
}

export interface GetInfoResponse {
  model_id: string;
  status: string;
  model_data: {
    base_model: string;
    lora_config: LoraConfig | null;
    model_name: string | null;
  };
}

// ---------------------------------------------------------------- async operations

/** Optional on every async POST: retrying with the same `(model_id, seq_id)` returns the
 * original request id; the same seq_id with another payload is 409. */
interface Sequenced {
  seq_id?: number;
}

export interface ForwardBackwardInput {
  data: Datum[];
  loss_fn: WireLossFn;
  loss_fn_config?: LossFnConfig | null;
}

export interface ForwardBackwardRequest extends Sequenced {
  model_id: string;
  forward_backward_input: ForwardBackwardInput;
}

export interface ForwardRequest extends Sequenced {
  model_id: string;
  forward_input: ForwardBackwardInput;
}

export interface OptimStepRequest extends Sequenced {
  model_id: string;
  adam_params: AdamParams;
}

export interface SaveWeightsRequest extends Sequenced {
  model_id: string;
  /** Checkpoint name matching `CHECKPOINT_NAME_PATTERN`. */
  path: string;
}

export interface LoadWeightsRequest extends Sequenced {
  model_id: string;
  /** `tinker://<model_id>/weights/<name>` from `save_weights`. */
  path: string;
  /** Also restore the optimizer state (SkyRL `load_optimizer`; its default when absent is true). */
  optimizer: boolean;
}

export interface SaveWeightsForSamplerRequest extends Sequenced {
  model_id: string;
  path: string;
}

export interface SamplingParams {
  max_tokens: number;
  seed?: number;
  stop?: number[];
  temperature?: number; // default 1
  top_k?: number; // default -1
  top_p?: number; // default 1
}

/** `seq_id` here numbers the requests of one sampling session (deterministic request ids). */
export interface AsampleRequest extends Sequenced {
  num_samples: number;
  prompt: ModelInput;
  sampling_params: SamplingParams;
  model_path?: string;
  base_model?: string;
  sampling_session_id?: string;
  prompt_logprobs?: boolean;
  topk_prompt_logprobs?: number;
}

/** Exactly one of `model_path` / `base_model`. */
export interface CreateSamplingSessionRequest {
  session_id: string;
  /** Per-session counter of sampling sessions. */
  sampling_session_seq_id: number;
  model_path?: string;
  base_model?: string;
}

export interface CreateSamplingSessionResponse {
  sampling_session_id: string;
  type?: 'create_sampling_session';
}

/** 200 body of the archive route (hosted Tinker's announced contract; today a 302 with the
 * signed URL in `Location` and its expiry in `Expires`). */
export interface CheckpointArchiveUrlResponse {
  url: string;
  expires?: string;
}

/** Returned by every async POST. */
export interface UntypedFuture {
  request_id: string;
  future_id?: string;
  status: 'pending';
  model_id?: string;
}

export interface RetrieveFutureRequest {
  request_id: string;
}

// ---------------------------------------------------------------- future results

export interface LossFnOutput {
  /** π_train log-probability of each target token. */
  logprobs?: TensorData;
  elementwise_loss?: TensorData;
  /** Anneal extension: value-head scores (one per datum or per position). */
  scores?: TensorData;
}

/** Result of `forward` and `forward_backward`: one output per datum. */
export interface ForwardBackwardOutput {
  loss_fn_output_type: 'scalar';
  loss_fn_outputs: LossFnOutput[];
  metrics: Metrics;
}

export interface OptimStepResponse {
  /** SkyRL: `skyrl.ai/grad_norm`, `skyrl.ai/learning_rate`; Anneal: `grad_norm:last`. */
  metrics?: Metrics | null;
}

export interface SaveWeightsResponse {
  /** `tinker://<model_id>/weights/<name>` */
  path: string;
  type: 'save_weights';
}

export interface LoadWeightsResponse {
  path?: string;
  type: 'load_weights';
}

export interface SaveWeightsForSamplerResponse {
  /** SkyRL: `tinker://<model_id>/<name>`; hosted Tinker: `tinker://<model_id>/sampler_weights/<name>` */
  path: string;
  type: 'save_weights_for_sampler';
  sampling_session_id: string | null;
}

export interface SampledSequenceWire {
  tokens: number[];
  logprobs: number[];
  stop_reason: 'length' | 'stop';
}

export interface SampleResponse {
  sequences: SampledSequenceWire[];
  prompt_logprobs: null;
  type?: 'sample';
}

/** The tinker SDK's in-band failure form of a future result (also accepted from 200s). */
export interface RequestFailedResponse {
  error: string;
  category?: string;
}

// ---------------------------------------------------------------- errors

/** 408 from retrieve_future: still pending (poll again). 400: failed. 404: unknown. */
export interface DetailError {
  detail: string;
}

/** One FastAPI/pydantic validation failure. */
export interface ValidationIssue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/** 422 body. */
export interface ValidationErrorBody {
  detail: ValidationIssue[];
}
