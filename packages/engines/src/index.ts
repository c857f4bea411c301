export type * from './types.ts';
export { ByteTokenizer, SPECIAL_MARKERS } from './embedded/tokenizer.ts';
// Hugging Face tokenizer.json byte-level BPE (Qwen2, Llama-3, GPT-2); see README.md.
export {
  HfBpeTokenizer,
  TokenizerConfigError,
  hfTokenizerFromJson,
  loadHfTokenizer,
} from './tokenizers/hf-bpe.ts';
export type { HfTokenizerOptions } from './tokenizers/hf-bpe.ts';
// A model's own chat template (tokenizer_config.json `chat_template`), rendered with Jinja.
export {
  ChatTemplate,
  chatTemplateFromConfig,
  loadChatTemplate,
} from './tokenizers/chat-template.ts';
export type {
  ChatMessage,
  ChatToolCall,
  ChatToolSpec,
  RenderOptions,
  TemplateArgs,
} from './tokenizers/chat-template.ts';
export type { AddedToken } from './tokenizers/hf-bpe.ts';
// The model's own stop ids (tokenizer_config eos_token + generation_config eos_token_id).
export { readModelStopIds } from './tokenizers/stop-ids.ts';

// HTTP engine clients: vLLM (inference) and Tinker-compatible (training); see README.md.
export { BytePool, processBytePool } from './http/byte-pool.ts';
export type { BytePoolStats } from './http/byte-pool.ts';
export { ENGINE_ERROR_CODES, EngineError } from './http/errors.ts';
export type { EngineErrorCode, EngineErrorContext, EngineKind } from './http/errors.ts';
export type { RetryPolicy } from './http/retry.ts';
export { realScheduler, realTimers, seededRng } from './http/timing.ts';
export type { Rng, Scheduler, Sleep, Timers } from './http/timing.ts';
export { VllmInferenceEngine } from './vllm/client.ts';
// What a live vLLM server reports as logprobs (docs/engines.md "Logprobs and temperature").
export { classifyLogprobsMode, logprobsModeMismatch, probeLogprobsMode } from './logprobs-mode.ts';
export type { LogprobsModeProbeOptions, LogprobsModeVerdict, TopValues } from './logprobs-mode.ts';
export type { VllmDeps, VllmStats } from './vllm/client.ts';
export type { VllmEndpointConfig } from './vllm/config.ts';
export { DEFAULT_ADAPTER_LAYOUT, adapterPathResolver, parseSamplerUri } from './vllm/lora-paths.ts';
export type { AdapterStorage } from './vllm/lora-paths.ts';
export type { ReplicaSnapshot } from './vllm/replicas.ts';
export type { VllmEvent } from './vllm/transport.ts';
export {
  newAdapterInstance,
  parseVersionedAdapterName,
  versionedAdapterName,
} from './vllm/weight-sync.ts';
export type { AdapterSnapshot } from './vllm/weight-sync.ts';
export {
  VLLM_DEFAULT_MAX_LORA_RANK,
  vllmRankIssue,
  vllmWeightsFormatIssue,
} from './vllm/endpoint-checks.ts';
export { loadInplaceFromVersion, maxLorasOf, probeVllmEndpoint } from './vllm/probe.ts';
export type {
  AdapterDirProbe,
  VllmEndpointProbe,
  VllmProbeConfig,
  VllmReplicaProbe,
  VllmServedModel,
} from './vllm/probe.ts';
// Sampler-weight archives (SkyRL's {name}.tar.gz) -> adapter directories; see README.md.
export { AdapterError } from './adapters/errors.ts';
export type { AdapterErrorReason } from './adapters/errors.ts';
export { DEFAULT_ARCHIVE_LIMITS, extractArchive } from './adapters/archive.ts';
export type { ArchiveLimits, ExtractResult } from './adapters/archive.ts';
export { prepareSamplerWeights } from './adapters/prepare.ts';
export type { PreparedSamplerWeights, SamplerWeightsKind } from './adapters/prepare.ts';
export { TinkerTrainerEngine } from './tinker/engine.ts';
export type { TinkerDeps } from './tinker/engine.ts';
export { TinkerTrainerModel } from './tinker/model.ts';
export type {
  FuturePollPolicy,
  TinkerConnectionConfig,
  TinkerEndpointConfig,
} from './tinker/config.ts';
export { TinkerSamplingEngine } from './tinker/sampling.ts';
export type { TinkerSamplerConfig } from './tinker/sampling.ts';
export { downloadSamplerArchive, fetchSamplerWeights } from './tinker/archive.ts';
export type { ArchiveDownloadOptions, DownloadedArchive } from './tinker/archive.ts';
export type { TinkerEvent } from './tinker/transport.ts';
export { combineMetrics, gradNormOf, parseMetricKey, parseMetrics } from './tinker/metrics.ts';
export type { ParsedMetricKey } from './tinker/metrics.ts';
export {
  CHECKPOINT_NAME_PATTERN,
  TINKER_API_PREFIX,
  TINKER_ROUTES,
  parseSamplerPath,
} from './tinker/wire.ts';
export type * as TinkerWire from './tinker/wire.ts';
export {
  KIND_LOSSES,
  SKYRL_FSDP_CAPABILITIES,
  SKYRL_JAX_CAPABILITIES,
  TINKER_CAPABILITIES,
  checkRunSupported,
} from './capabilities.ts';
export type { RunKind } from './capabilities.ts';

// Embedded engines (laptop/CI, no GPU): TypeScript trainer + ONNX sampler; see README.md.
export { DEFAULT_MODEL_CONFIG } from './embedded/params.ts';
export type { ModelConfig, ModelHead } from './embedded/params.ts';
export { DEFAULT_ADAM_PARAMS } from './embedded/optimizer.ts';
export {
  DEFAULT_BASE_MODEL,
  EMBEDDED_TRAINER_CAPABILITIES,
  EmbeddedTrainer,
} from './embedded/trainer.ts';
export type { EmbeddedTrainerOptions } from './embedded/trainer.ts';
export type { EmbeddedTrainerModel } from './embedded/trainer-model.ts';
export { EmbeddedTrainerServer } from './embedded/trainer-server.ts';
export type { TrainerServerOptions } from './embedded/trainer-server.ts';
export { EMBEDDED_SAMPLER_OWNER, EmbeddedSamplerServer } from './embedded/sampler-server.ts';
export type { SamplerServerOptions, ServedCompletion } from './embedded/sampler-server.ts';
export { EmbeddedInferenceEngine } from './embedded/onnx-sampler.ts';
export type { EmbeddedInferenceOptions } from './embedded/onnx-sampler.ts';
export { exportOnnx, ONNX_EXPORT_FORMAT } from './embedded/onnx-export.ts';
export type { OnnxExport } from './embedded/onnx-export.ts';
export {
  CHECKPOINT_FORMAT,
  type CheckpointFs,
  NODE_CHECKPOINT_FS,
  loadCheckpoint,
  saveCheckpoint,
} from './embedded/checkpoint.ts';
export {
  resolveTinkerPath,
  tinkerPathResolver,
  tinkerSamplerUri,
  tinkerWeightsUri,
} from './embedded/tinker-paths.ts';

// Preference reward model (docs/recipe.md §5): any value-head ONNX export, onnxruntime in a worker.
export { OnnxRewardScorer } from './reward-model/scorer.ts';
export type { OnnxRewardScorerOptions, ScoredPair } from './reward-model/scorer.ts';
export { preferenceProbability } from './reward-model/preference.ts';
