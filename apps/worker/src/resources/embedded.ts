// The embedded engines (laptop/CI, no GPU) behind one small interface: the ONNX sampler, the
// embedded trainer served over the Tinker-compatible HTTP subset in-process (the worker talks
// to it with the production Tinker client over real HTTP), and the ONNX reward scorer.
// `defaultEmbeddedEngines` is the single place that binds them to @anneal/engines.
import type {
  InferenceEngine,
  RewardScorer,
  TinkerEvent,
  TrainerCapabilities,
  TrainerEngine,
} from '@anneal/engines';
import { RunSetupError } from '../errors.ts';
import type { RewardModelSource } from './factories.ts';

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

function unavailable(what: string): never {
  throw new RunSetupError(
    `the embedded ${what} is not available in this build of @anneal/engines; ` +
      'configure a vllm/tinker endpoint in the operator config (ANNEAL_CONFIG)',
  );
}

/** Binds the embedded engines of @anneal/engines (what it exports today). */
export function defaultEmbeddedEngines(): EmbeddedEngines {
  return {
    inference: async () => unavailable('inference engine'),
    trainer: async () => unavailable('trainer'),
    rewardModel: async () => unavailable('reward model scorer'),
  };
}
