// How the worker turns an operator-config entry into a live engine. One small interface so
// that swapping an implementation (the embedded engines, a test double) is one object.
import {
  ByteTokenizer,
  TinkerSamplingEngine,
  TinkerTrainerEngine,
  VllmInferenceEngine,
  type InferenceEngine,
  type RewardScorer,
  type TinkerEndpointConfig,
  type TinkerEvent,
  type TinkerSamplerConfig,
  type Tokenizer,
  type TrainerCapabilities,
  type TrainerEngine,
  type VllmEndpointConfig,
  type VllmEvent,
} from '@anneal/engines';
import { SearxngBackend, type SearchBackend } from '@anneal/envs';
import { RunSetupError } from '../errors.ts';
import { EMBEDDED_MODEL_IDS, type EmbeddedEngines } from './embedded.ts';
import type { RewardModelSource } from './reward-model-source.ts';
import { hfTokenizerCache, type TokenizerSource } from './tokenizers.ts';

/** Engine-level events (retries, replica health) the runtime maps to metrics and logs. */
export interface EngineEventSinks {
  vllm(event: VllmEvent): void;
  tinker(event: TinkerEvent): void;
}

export interface EngineFactories {
  vllm(config: VllmEndpointConfig, onEvent: EngineEventSinks['vllm']): InferenceEngine;
  tinker(config: TinkerEndpointConfig, onEvent: EngineEventSinks['tinker']): Promise<TrainerEngine>;
  /** A Tinker-compatible service's own sampling (inference endpoints of `type: tinker`). */
  tinkerSampler(
    config: TinkerSamplerConfig,
    onEvent: EngineEventSinks['tinker'],
  ): Promise<InferenceEngine>;
  embedded: EmbeddedEngines;
  /** Preference model scored with onnxruntime-node (docs/recipe.md §5). */
  rewardModel(source: RewardModelSource): Promise<RewardScorer>;
  /** Tokenizer by name (`baseModels.<name>.tokenizer`, else the model id), or the base model's
   * `{type: hf}` tokenizer.json when `source.hf` is set. */
  tokenizer(name: string, source?: TokenizerSource): Tokenizer;
  searxng(name: string, baseUrl: string): SearchBackend;
}

/** Tokenizers this worker ships: the byte-level tokenizer of the embedded models. */
export function builtinTokenizer(name: string): Tokenizer {
  if (name === 'byte' || EMBEDDED_MODEL_IDS.includes(name)) return new ByteTokenizer();
  throw new RunSetupError(
    `tokenizer '${name}' is not available in this worker (available: byte, ${EMBEDDED_MODEL_IDS.join(', ')}); ` +
      'set baseModels.<name>.tokenizer in the operator config',
  );
}

/** Production factories: the HTTP clients of @anneal/engines, embedded engines in-process. */
export function defaultEngineFactories(local: EmbeddedEngines): EngineFactories {
  const hfTokenizer = hfTokenizerCache();
  return {
    vllm: (config, onEvent) => new VllmInferenceEngine(config, { onEvent }),
    tinker: (config, onEvent) => TinkerTrainerEngine.connect(config, { onEvent }),
    tinkerSampler: (config, onEvent) => TinkerSamplingEngine.connect(config, { onEvent }),
    embedded: local,
    rewardModel: (source) => local.rewardModel(source),
    tokenizer: (name, source) =>
      source?.hf ? hfTokenizer({ ...source, hf: source.hf }) : builtinTokenizer(name),
    searxng: (name, baseUrl) => new SearxngBackend(name, { baseUrl }),
  };
}

export type { EmbeddedEngines, TokenizerSource, TrainerCapabilities };
