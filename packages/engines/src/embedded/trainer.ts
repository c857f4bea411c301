// The embedded TrainerEngine: trains embedded transformers in-process, with the forward and
// backward passes in worker threads (a pool of up to 2 that splits large batches), so the
// event loop of the worker process stays free. Full-parameter training: `loraRank` is ignored.
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { CreateModelOptions, TrainerCapabilities, TrainerEngine } from '../types.ts';
import { type CheckpointFs, loadCheckpoint } from './checkpoint.ts';
import type { ModelConfig } from './params.ts';
import {
  copyMatchingTensors,
  DEFAULT_MODEL_CONFIG,
  initParams,
  paramLayout,
  validateConfig,
} from './params.ts';
import { EmbeddedTrainerModel } from './trainer-model.ts';
import { RpcWorker } from './worker-rpc.ts';

export const EMBEDDED_TRAINER_CAPABILITIES: TrainerCapabilities = {
  kinds: ['sft', 'rm', 'grpo', 'eval'],
  losses: ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'],
  reduction: 'sum', // token losses are summed, like Tinker (docs/engines.md "Reduction")
};

/** Name of the default base model: a freshly initialised DEFAULT_MODEL_CONFIG. */
export const DEFAULT_BASE_MODEL = 'anneal-tiny';

export interface EmbeddedTrainerOptions {
  /** Directory for checkpoints and sampler exports: `<artifactDir>/<model_id>/…`. */
  artifactDir: string;
  /** Compute threads; default 2 when the host has ≥ 2 cores, else 1. */
  threads?: number;
  /** Base models by name (architecture without the head); default { 'anneal-tiny': DEFAULT }. */
  baseModels?: Record<string, Omit<ModelConfig, 'head'>>;
  /** File operations of checkpoint saves (tests inject a full disk); default node:fs. */
  fs?: CheckpointFs;
}

export class EmbeddedTrainer implements TrainerEngine {
  readonly capabilities = EMBEDDED_TRAINER_CAPABILITIES;
  private readonly threads: RpcWorker[];
  private readonly models = new Map<string, EmbeddedTrainerModel>();
  private readonly baseModels: Record<string, Omit<ModelConfig, 'head'>>;
  private closed = false;

  constructor(private readonly options: EmbeddedTrainerOptions) {
    const count = options.threads ?? Math.min(2, availableParallelism());
    if (!Number.isInteger(count) || count < 1)
      throw new RangeError(`threads must be >= 1, got ${count}`);
    const { head: _head, ...backbone } = DEFAULT_MODEL_CONFIG;
    this.baseModels = options.baseModels ?? { [DEFAULT_BASE_MODEL]: backbone };
    this.threads = Array.from(
      { length: count },
      (_, i) =>
        new RpcWorker(new URL('./train.worker.ts', import.meta.url), null, `anneal-trainer-${i}`),
    );
  }

  /**
   * baseModel: a name from `baseModels` (fresh weights from `seed`, default 0) or the directory
   * of an embedded checkpoint (its weights; a value head on an LM checkpoint starts fresh).
   */
  async createModel(options: CreateModelOptions): Promise<EmbeddedTrainerModel> {
    if (this.closed) throw new Error('embedded trainer is closed');
    const head = options.head ?? 'lm';
    const seed = options.seed ?? 0;
    let config: ModelConfig;
    let params: Float32Array;
    const named = this.baseModels[options.baseModel];
    if (named) {
      config = validateConfig({ ...named, head });
      params = new Float32Array(paramLayout(config).size);
      initParams(paramLayout(config), params, seed);
    } else if (await isDirectory(options.baseModel)) {
      const checkpoint = await loadCheckpoint(options.baseModel);
      config = { ...checkpoint.config, head };
      params = new Float32Array(paramLayout(config).size);
      initParams(paramLayout(config), params, seed);
      copyMatchingTensors(
        paramLayout(checkpoint.config),
        checkpoint.params,
        paramLayout(config),
        params,
      );
    } else {
      const known = Object.keys(this.baseModels).join(', ');
      throw new RangeError(
        `base_model '${options.baseModel}' is neither a known base model (${known}) nor a checkpoint directory`,
      );
    }
    const id = `m-${randomUUID().slice(0, 8)}`;
    const model = new EmbeddedTrainerModel(
      id,
      config,
      params,
      this.threads,
      path.resolve(this.options.artifactDir),
      (modelId) => this.releaseModel(modelId),
      this.options.fs,
    );
    await model.attach();
    this.models.set(id, model);
    return model;
  }

  /** Root of `<model_id>/weights/<name>` and `<model_id>/sampler_weights/<name>`. */
  get artifactDir(): string {
    return path.resolve(this.options.artifactDir);
  }

  /** Ids of the models it holds (each with its weights, gradients and optimizer state). */
  modelIds(): string[] {
    return [...this.models.keys()];
  }

  getModel(id: string): EmbeddedTrainerModel | undefined {
    return this.models.get(id);
  }

  /** Frees a model's buffers on the compute threads (the HTTP server does this on session expiry). */
  async releaseModel(id: string): Promise<void> {
    const model = this.models.get(id);
    if (!model) return;
    this.models.delete(id);
    await model.detach();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.models.clear();
    await Promise.all(this.threads.map((t) => t.terminate()));
  }
}

async function isDirectory(candidate: string): Promise<boolean> {
  try {
    return (await stat(candidate)).isDirectory();
  } catch {
    return false;
  }
}
