// One model of the embedded trainer (a Tinker `model_id`): weights in a SharedArrayBuffer read
// by the compute threads, gradients accumulated per thread and summed by `optimStep`, AdamW
// on the main thread (≈1 ms). Operations run strictly in call order, one at a time.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type {
  AdamParams,
  Datum,
  ForwardResult,
  LossFn,
  LoadWeightsOptions,
  LossFnConfig,
  OptimStepResult,
  SamplerWeights,
  TrainerModel,
} from '../types.ts';
import { type CheckpointFs, loadCheckpoint, saveCheckpoint } from './checkpoint.ts';
import type { BatchOutput, DatumOutput } from './compute.ts';
import { pairLabel } from './compute.ts';
import { checkDatum, checkLossConfig } from './losses.ts';
import { exportOnnx } from './onnx-export.ts';
import type { AdamState } from './optimizer.ts';
import { adamWStep, createAdamState, validateAdamParams } from './optimizer.ts';
import type { ModelConfig, ParamLayout } from './params.ts';
import { copyMatchingTensors, paramLayout } from './params.ts';
import { shardBatch } from './shards.ts';
import type { TrainMessage } from './train.worker.ts';
import type { RpcWorker } from './worker-rpc.ts';

export interface ModelRunResult {
  outputs: DatumOutput[];
  metrics: Record<string, number>;
}

export class EmbeddedTrainerModel implements TrainerModel {
  readonly layout: ParamLayout;
  readonly params: Float32Array; // over a SharedArrayBuffer
  private readonly threadGrads: Float32Array[]; // one SharedArrayBuffer per thread
  private adam: AdamState;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly id: string,
    readonly config: ModelConfig,
    initial: Float32Array,
    private readonly threads: readonly RpcWorker[],
    private readonly artifactDir: string,
    /** Forgets the model where it is registered (the trainer's map) and detaches it. */
    private readonly releaser: (id: string) => Promise<void> = () => this.detach(),
    private readonly fs?: CheckpointFs,
  ) {
    this.layout = paramLayout(config);
    this.params = new Float32Array(new SharedArrayBuffer(this.layout.size * 4));
    this.params.set(initial);
    this.threadGrads = threads.map(
      () => new Float32Array(new SharedArrayBuffer(this.layout.size * 4)),
    );
    this.adam = createAdamState(this.layout.size);
  }

  /** Registers the shared buffers on every compute thread. */
  async attach(): Promise<void> {
    await Promise.all(
      this.threads.map((t, i) =>
        t.call({
          type: 'register',
          modelId: this.id,
          config: this.config,
          params: this.params.buffer as SharedArrayBuffer,
          grads: this.threadGrads[i]!.buffer as SharedArrayBuffer,
        } satisfies TrainMessage),
      ),
    );
  }

  async detach(): Promise<void> {
    await this.serial(() =>
      Promise.all(
        this.threads.map((t) =>
          t.call({ type: 'unregister', modelId: this.id } satisfies TrainMessage),
        ),
      ),
    );
  }

  /** Frees the model's buffers here and on the compute threads (after its queued operations). */
  release(): Promise<void> {
    return this.releaser(this.id);
  }

  /** Runs operations one at a time, in call order (a failed one does not block the next). */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.chain.then(op, op);
    this.chain = run.catch(() => undefined);
    return run;
  }

  forward(data: readonly Datum[], lossFn: LossFn, config?: LossFnConfig): Promise<ForwardResult> {
    return this.run(data, lossFn, config ?? {}, false).then(toForwardResult);
  }

  forwardBackward(
    data: readonly Datum[],
    lossFn: LossFn,
    config?: LossFnConfig,
  ): Promise<ForwardResult> {
    return this.run(data, lossFn, config ?? {}, true).then(toForwardResult);
  }

  /** forward / forward_backward with per-datum elementwise losses (the HTTP server needs them). */
  run(
    data: readonly Datum[],
    lossFn: LossFn,
    config: LossFnConfig,
    backward: boolean,
  ): Promise<ModelRunResult> {
    return this.serial(async () => {
      if (data.length === 0) throw new RangeError('data: at least one datum is required');
      checkLossConfig(lossFn, config);
      const checked = data.map((d, i) => checkDatum(d, i, lossFn));
      if (lossFn === 'bradley_terry') {
        if (checked.length % 2 !== 0)
          throw new RangeError(`bradley_terry takes pairs: got ${checked.length} datums`);
        for (let i = 0; i < checked.length / 2; i++) pairLabel(checked, i); // errors name global indices
      }
      const shards = shardBatch(checked, lossFn, this.threads.length);
      const results = await Promise.all(
        shards.map((indices, s) =>
          this.threads[s]!.call<BatchOutput>({
            type: 'run',
            modelId: this.id,
            data: indices.map((i) => checked[i]!),
            lossFn,
            config,
            backward,
          } satisfies TrainMessage),
        ),
      );
      const outputs: DatumOutput[] = new Array(checked.length);
      let lossSum = 0;
      let pairs = 0;
      let correct = 0;
      results.forEach((r, s) => {
        shards[s]!.forEach((index, k) => (outputs[index] = r.outputs[k]!));
        lossSum += r.lossSum;
        pairs += r.pairs;
        correct += r.pairsCorrect;
      });
      const metrics: Record<string, number> = { 'loss:sum': lossSum };
      if (pairs > 0) metrics['pair_accuracy:mean'] = correct / pairs;
      return { outputs, metrics };
    });
  }

  optimStep(params: AdamParams): Promise<OptimStepResult> {
    return this.serial(async () => {
      validateAdamParams(params); // before touching the accumulated gradients
      const [total, ...others] = this.threadGrads;
      for (const g of others) for (let i = 0; i < g.length; i++) total![i]! += g[i]!;
      for (const g of others) g.fill(0);
      let step;
      try {
        step = adamWStep(this.layout, this.params, total!, this.adam, params);
      } catch (err) {
        total!.fill(0); // a non-finite gradient must not poison the next accumulation
        throw err;
      }
      const { gradNorm, clipScale } = step;
      return {
        gradNorm,
        metrics: {
          'grad_norm:last': gradNorm,
          'learning_rate:last': params.learningRate,
          'grad_clip_scale:last': clipScale,
        },
      };
    });
  }

  /** Weights + optimizer state to `<artifactDir>/<id>/weights/<name>`; returns that directory. */
  saveWeights(name: string): Promise<string> {
    return this.serial(async () => {
      const dir = path.join(this.artifactDir, this.id, 'weights', checkName(name));
      await saveCheckpoint(
        dir,
        { config: this.config, params: this.params, adam: this.adam },
        this.fs,
      );
      return dir;
    });
  }

  /** Deletes a `saveWeights` directory of any model of this trainer (`<artifactDir>/<model
   * id>/weights/<name>`: retention deletes an earlier attempt's); false when it was already gone. */
  async deleteWeights(dir: string): Promise<boolean> {
    const relative = path.relative(this.artifactDir, path.resolve(dir)).split(path.sep);
    if (relative.length !== 3 || relative[1] !== 'weights' || relative[0] === '..') {
      throw new RangeError(`deleteWeights: ${dir} is not <artifactDir>/<model id>/weights/<name>`);
    }
    checkName(relative[2]!);
    if (!existsSync(dir)) return false;
    await rm(dir, { recursive: true, force: true });
    return true;
  }

  /**
   * Restores a checkpoint directory. Same architecture: the weights, and the optimizer state
   * (moments and step count) with `optimizer: true`; with `optimizer: false` the optimizer starts
   * fresh (moments 0, step 0). Another head (an LM checkpoint into a value model, docs/recipe.md
   * §5 "shares the policy's backbone"): every tensor the two share is copied, the head keeps its
   * initialisation, the optimizer restarts.
   */
  loadWeights(dir: string, options: LoadWeightsOptions): Promise<void> {
    return this.serial(async () => {
      const checkpoint = await loadCheckpoint(dir);
      const source = paramLayout(checkpoint.config);
      const sameArchitecture = JSON.stringify(checkpoint.config) === JSON.stringify(this.config);
      if (sameArchitecture) {
        this.params.set(checkpoint.params);
        const restore = options.optimizer && checkpoint.adam;
        this.adam = restore ? checkpoint.adam! : createAdamState(this.layout.size);
      } else {
        const { head: _a, ...mine } = this.config;
        const { head: _b, ...theirs } = checkpoint.config;
        if (JSON.stringify(mine) !== JSON.stringify(theirs)) {
          throw new Error(
            `${dir}: checkpoint backbone ${JSON.stringify(theirs)} does not match model ${JSON.stringify(mine)}`,
          );
        }
        copyMatchingTensors(source, checkpoint.params, this.layout, this.params);
        this.adam = createAdamState(this.layout.size);
      }
      for (const g of this.threadGrads) g.fill(0);
    });
  }

  /** ONNX export to `<artifactDir>/<id>/sampler_weights/<name>` (what the sampler loads). */
  saveWeightsForSampler(name: string): Promise<SamplerWeights> {
    return this.serial(async () => {
      const dir = path.join(this.artifactDir, this.id, 'sampler_weights', checkName(name));
      await exportOnnx(dir, this.config, this.params);
      return { name, path: dir };
    });
  }
}

function toForwardResult(result: ModelRunResult): ForwardResult {
  return { logprobs: result.outputs.map((o) => o.logprobs), metrics: result.metrics };
}

export function checkName(name: string): string {
  if (!/^[a-zA-Z0-9_-]+$/.test(name))
    throw new RangeError(`checkpoint name must match ^[a-zA-Z0-9_-]+$, got '${name}'`);
  return name;
}
