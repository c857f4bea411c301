// The production RewardScorer: a value-head ONNX model (Anneal's own `rm` export or a user's)
// run by onnxruntime-node in a worker thread, CPU or the CUDA execution provider.
// Contract: token ids of prompt + response → one scalar score s(x, y) per pair; see README.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { RpcWorker } from '../embedded/worker-rpc.ts';
import type { RewardScorer, TokenIds } from '../types.ts';
import { preferenceProbability } from './preference.ts';
import type { ModelDescription, ScorerMessage, ScorerWorkerData } from './scorer.worker.ts';

export interface OnnxRewardScorerOptions {
  /** The .onnx file, or an embedded export directory holding model.onnx (+ export.json). */
  modelPath: string;
  /** 'cuda' needs onnxruntime-node's CUDA libraries; loading fails with a clear error without. */
  executionProvider?: 'cpu' | 'cuda';
  /** Rows per onnxruntime run (default 16); rows are length-sorted to limit padding. */
  batchSize?: number;
  /** Id written into padding positions (default 0; the model never reads them). */
  padTokenId?: number;
  /** Longest prompt + response accepted; default the export's blockSize when known. */
  maxLength?: number;
  intraOpNumThreads?: number;
}

export interface ScoredPair {
  prompt: TokenIds;
  response: TokenIds;
}

export class OnnxRewardScorer implements RewardScorer {
  private constructor(
    private readonly worker: RpcWorker,
    readonly description: ModelDescription,
    private readonly options: Required<
      Pick<OnnxRewardScorerOptions, 'batchSize' | 'padTokenId'>
    > & { maxLength: number | undefined },
  ) {}

  /** Loads the model in a worker thread and checks its input/output contract. */
  static async create(options: OnnxRewardScorerOptions): Promise<OnnxRewardScorer> {
    const isDir = existsSync(options.modelPath) && statSync(options.modelPath).isDirectory();
    const modelPath = isDir ? path.join(options.modelPath, 'model.onnx') : options.modelPath;
    if (!existsSync(modelPath)) throw new Error(`reward model not found: ${modelPath}`);
    const batchSize = options.batchSize ?? 16;
    if (!Number.isInteger(batchSize) || batchSize < 1)
      throw new RangeError(`batchSize must be >= 1, got ${batchSize}`);
    const data: ScorerWorkerData = {
      modelPath,
      executionProvider: options.executionProvider ?? 'cpu',
      intraOpNumThreads: options.intraOpNumThreads ?? 1,
    };
    const worker = new RpcWorker(
      new URL('./scorer.worker.ts', import.meta.url),
      data,
      'anneal-reward-model',
    );
    try {
      const description = await worker.call<ModelDescription>({
        type: 'describe',
      } satisfies ScorerMessage);
      const maxLength = options.maxLength ?? exportBlockSize(path.dirname(modelPath));
      return new OnnxRewardScorer(worker, description, {
        batchSize,
        padTokenId: options.padTokenId ?? 0,
        maxLength,
      });
    } catch (err) {
      await worker.terminate();
      throw err;
    }
  }

  /** s(x, y) for each pair, in order. */
  async score(pairs: readonly ScoredPair[]): Promise<Float32Array> {
    const rows = pairs.map((p, i) => {
      const row = [...p.prompt, ...p.response];
      const bad = row.findIndex((t) => !Number.isInteger(t) || t < 0);
      if (bad >= 0)
        throw new RangeError(`pairs[${i}]: token ${row[bad]} at position ${bad} is not a token id`);
      if (row.length === 0) throw new RangeError(`pairs[${i}]: prompt + response is empty`);
      const max = this.options.maxLength;
      if (max !== undefined && row.length > max) {
        throw new RangeError(
          `pairs[${i}]: prompt + response has ${row.length} tokens; the reward model takes at most ${max}`,
        );
      }
      return row;
    });
    const order = rows.map((_, i) => i).sort((a, b) => rows[a]!.length - rows[b]!.length);
    const scores = new Float32Array(rows.length);
    const batches: Promise<void>[] = [];
    for (let start = 0; start < order.length; start += this.options.batchSize) {
      const indices = order.slice(start, start + this.options.batchSize);
      const message: ScorerMessage = {
        type: 'score',
        rows: indices.map((i) => rows[i]!),
        padTokenId: this.options.padTokenId,
      };
      batches.push(
        this.worker
          .call<Float32Array>(message)
          .then((batch) => indices.forEach((row, k) => (scores[row] = batch[k]!))),
      );
    }
    await Promise.all(batches);
    return scores;
  }

  /**
   * Position-agnostic preference of each rollout over its paired reference rollout (docs/recipe.md §5):
   * P̄ = σ(s(x, y) − s(x, y_ref)), the rollout's preference score s(τ_i).
   */
  async preference(
    items: ReadonlyArray<{
      prompt: readonly number[];
      response: readonly number[];
      reference: readonly number[];
    }>,
  ): Promise<Float32Array> {
    const scores = await this.score(
      items.flatMap((it) => [
        { prompt: it.prompt, response: it.response },
        { prompt: it.prompt, response: it.reference },
      ]),
    );
    return Float32Array.from(items, (_, i) =>
      preferenceProbability(scores[2 * i]!, scores[2 * i + 1]!),
    );
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

function exportBlockSize(dir: string): number | undefined {
  const manifest = path.join(dir, 'export.json');
  if (!existsSync(manifest)) return undefined;
  const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { config?: { blockSize?: number } };
  return parsed.config?.blockSize;
}
