// The embedded engines (laptop/CI, no GPU) behind one small interface: the ONNX sampler, the
// embedded trainer served over the Tinker-compatible HTTP subset in-process (the worker talks
// to it with the production Tinker client over real HTTP), and the ONNX reward scorer.
// `defaultEmbeddedEngines` is the single place that binds them to @anneal/engines.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  DEFAULT_BASE_MODEL,
  DEFAULT_MODEL_CONFIG,
  EmbeddedInferenceEngine,
  EmbeddedTrainer,
  type EmbeddedTrainerOptions,
  EmbeddedTrainerServer,
  OnnxRewardScorer,
  TinkerTrainerEngine,
  resolveTinkerPath,
  type InferenceEngine,
  type RewardScorer,
  type TinkerEvent,
  type TrainerCapabilities,
  type TrainerEngine,
} from '@anneal/engines';
import { MAX_POLICY_LAG } from '@anneal/protocol';
import type { RewardModelSource } from './reward-model-source.ts';

export interface EmbeddedEngines {
  /** The ONNX sampler (onnxruntime-node in worker threads). */
  inference(options: { name: string; artifactDir: string }): Promise<InferenceEngine>;
  /** The embedded trainer behind its in-process HTTP server, driven by the Tinker client. */
  trainer(options: {
    name: string;
    capabilities: TrainerCapabilities;
    artifactDir: string;
    onEvent: (event: TinkerEvent) => void;
  }): Promise<TrainerEngine>;
  rewardModel(source: RewardModelSource): Promise<RewardScorer>;
}

const { head: _head, ...TINY_BACKBONE } = DEFAULT_MODEL_CONFIG;
/** Base-model ids the embedded trainer knows; `embedded:tiny` is the local config's name. */
const EMBEDDED_BASE_MODELS = {
  [DEFAULT_BASE_MODEL]: TINY_BACKBONE,
  'embedded:tiny': TINY_BACKBONE,
};
export const EMBEDDED_MODEL_IDS: readonly string[] = Object.keys(EMBEDDED_BASE_MODELS);

/**
 * `trainerDirs`: artifact directories of the embedded trainer endpoints. Sampler weights and
 * checkpoints are `tinker://<model_id>/…` paths; the sampler and the reward scorer find them
 * there — also ones written by an earlier process (a resumed run), when the directory persists.
 */
export function defaultEmbeddedEngines(options: {
  trainerDirs: readonly string[];
  /** Builds the embedded trainer of an endpoint (tests: a trainer with an injected file
   * system, or one they inspect); default `new EmbeddedTrainer(options)`. */
  createTrainer?: (options: EmbeddedTrainerOptions) => EmbeddedTrainer;
}): EmbeddedEngines {
  const createTrainer = options.createTrainer ?? ((o) => new EmbeddedTrainer(o));
  const resolvePath = (uri: string): string => {
    if (!uri.startsWith('tinker://')) return uri;
    const candidates = options.trainerDirs.map((dir) => resolveTinkerPath(dir, uri));
    return candidates.find((file) => existsSync(file)) ?? candidates[0] ?? uri;
  };
  return {
    // The reference and up to k + 1 policy versions are served at once when a GRPO run samples
    // k steps ahead (docs/recipe.md "Pipelined GRPO"): none may be evicted while pinned.
    inference: async () =>
      new EmbeddedInferenceEngine({ resolvePath, maxLoadedWeights: MAX_POLICY_LAG + 2 }),
    async trainer({ name, capabilities, artifactDir, onEvent }) {
      const trainer = createTrainer({ artifactDir, baseModels: EMBEDDED_BASE_MODELS });
      // Loopback only; the key keeps other local processes from driving this trainer. The only
      // client is in this process and retries a lost reply within seconds: a finished future
      // (a forward_backward result holds every logprob of its batch) is kept one minute.
      const apiKey = randomBytes(16).toString('hex');
      const server = new EmbeddedTrainerServer(trainer, { apiKey, futureRetentionMs: 60_000 });
      try {
        const baseUrl = await server.listen(0, '127.0.0.1');
        const client = await TinkerTrainerEngine.connect(
          { name, baseUrl, apiKey, capabilities },
          { onEvent },
        );
        return {
          capabilities: client.capabilities,
          createModel: (o) => client.createModel(o),
          async close() {
            await client.close();
            await server.close();
            await trainer.close();
          },
        };
      } catch (error) {
        await server.close().catch(() => undefined);
        await trainer.close();
        throw error;
      }
    },
    rewardModel: (source) =>
      OnnxRewardScorer.create({
        modelPath: resolvePath(source.path),
        executionProvider: source.executionProvider,
      }),
  };
}
