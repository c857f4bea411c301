// The embedded InferenceEngine: samples from ONNX exports of the embedded model with
// onnxruntime-node, always in worker threads (ORT's run() is CPU-bound and would stall the
// event loop). A request's n samples decode as one batch; large n is split across the pool.
import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import type { InferenceEngine, ScoredSequence, SampleRequest, SamplerWeights } from '../types.ts';
import type { GenerateRequest } from './generate.ts';
import { ONNX_EXPORT_FORMAT } from './onnx-export.ts';
import type { ModelConfig } from './params.ts';
import type { SamplerMessage, SamplerWorkerData } from './sampler.worker.ts';
import { validateSamplingParams } from './sampling.ts';
import { RpcWorker } from './worker-rpc.ts';

export interface EmbeddedInferenceOptions {
  /** Worker threads; default 2 when the host has ≥ 2 cores, else 1. */
  threads?: number;
  /** onnxruntime intra-op threads per worker; default 1 (the pool is the parallelism). */
  intraOpNumThreads?: number;
  /** Always a stop token; default 256, the byte tokenizer's `<|eos|>`. */
  eosTokenId?: number;
  /** Maps SamplerWeights.path to a local export directory (e.g. `tinker://` paths). */
  resolvePath?: (weightsPath: string) => string;
  /** Weight sets kept loaded; the first one loaded (the base) is never evicted. Default 3. */
  maxLoadedWeights?: number;
  /** Seed for requests without one; default a random 31-bit integer. */
  seedSource?: () => number;
}

/** Requests with n above this are split across the pool (chunks of ≥ this many samples). */
const MIN_SAMPLES_PER_CHUNK = 4;

interface Job {
  name: string;
  request: GenerateRequest;
  signal: AbortSignal | undefined;
  resolve: (sequences: ScoredSequence[]) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: RpcWorker;
  abortFlag: Int32Array;
  job: Job | null;
}

export class EmbeddedInferenceEngine implements InferenceEngine {
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private readonly loaded: string[] = []; // load order; loaded[0] is the base
  private readonly configs = new Map<string, ModelConfig>();
  private closed = false;

  constructor(private readonly options: EmbeddedInferenceOptions = {}) {
    const threads = options.threads ?? Math.min(2, availableParallelism());
    if (!Number.isInteger(threads) || threads < 1)
      throw new RangeError(`threads must be >= 1, got ${threads}`);
    this.slots = Array.from({ length: threads }, (_, i) => {
      const abortFlag = new SharedArrayBuffer(4);
      const data: SamplerWorkerData = {
        abortFlag,
        intraOpNumThreads: options.intraOpNumThreads ?? 1,
      };
      const worker = new RpcWorker(
        new URL('./sampler.worker.ts', import.meta.url),
        data,
        `anneal-sampler-${i}`,
      );
      return { worker, abortFlag: new Int32Array(abortFlag), job: null };
    });
  }

  /** Weight sync: loads the export at weights.path on every worker under weights.name. */
  async loadWeights(weights: SamplerWeights): Promise<void> {
    if (this.closed) throw new Error('inference engine is closed');
    const dir = this.options.resolvePath ? this.options.resolvePath(weights.path) : weights.path;
    const manifestPath = path.join(dir, 'export.json');
    let manifest: { format?: string; config: ModelConfig; decoder: string | null };
    try {
      manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as typeof manifest;
    } catch (err) {
      throw new Error(
        `weights ${weights.name}: cannot read ${manifestPath} (${(err as Error).message})`,
        { cause: err },
      );
    }
    if (manifest.format !== ONNX_EXPORT_FORMAT || !manifest.decoder) {
      throw new Error(
        `weights ${weights.name}: ${manifestPath} is not an LM export (${ONNX_EXPORT_FORMAT})`,
      );
    }
    const message: SamplerMessage = {
      type: 'load',
      name: weights.name,
      decoderPath: path.join(dir, manifest.decoder),
      config: manifest.config,
    };
    await Promise.all(this.slots.map((s) => s.worker.call(message)));
    this.configs.set(weights.name, manifest.config);
    if (!this.loaded.includes(weights.name)) this.loaded.push(weights.name);
    const max = Math.max(2, this.options.maxLoadedWeights ?? 3);
    while (this.loaded.length > max) {
      const evicted = this.loaded.splice(1, 1)[0]!;
      this.configs.delete(evicted);
      await Promise.all(this.slots.map((s) => s.worker.call({ type: 'unload', name: evicted })));
    }
  }

  /** Unloads `name` from every worker (no-op for unknown names). */
  async releaseWeights(name: string): Promise<void> {
    const index = this.loaded.indexOf(name);
    if (this.closed || index < 0) return;
    this.loaded.splice(index, 1);
    this.configs.delete(name);
    await Promise.all(this.slots.map((s) => s.worker.call({ type: 'unload', name })));
  }

  sample(request: SampleRequest, signal?: AbortSignal): Promise<ScoredSequence[]> {
    if (this.closed) return Promise.reject(new Error('inference engine is closed'));
    let name: string;
    let jobs: GenerateRequest[];
    try {
      name = request.model ?? this.loaded[0] ?? '';
      const config = this.configs.get(name);
      if (!config)
        throw new Error(`no weights loaded under the name '${name}'; call loadWeights first`);
      jobs = this.split(request, config);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    if (signal?.aborted) return Promise.reject(abortError());
    const parts = jobs.map(
      (job) =>
        new Promise<ScoredSequence[]>((resolve, reject) => {
          this.queue.push({ name, request: job, signal, resolve, reject });
        }),
    );
    const onAbort = () => this.abort(signal!);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.dispatch();
    // An abort before the result is returned rejects, whether or not the threads had finished:
    // the caller that aborted never receives a result (as with fetch).
    return Promise.all(parts)
      .then((chunks) => {
        if (signal?.aborted) throw abortError();
        return chunks.flat();
      })
      .finally(() => signal?.removeEventListener('abort', onAbort));
  }

  private split(request: SampleRequest, config: ModelConfig): GenerateRequest[] {
    const { n, maxTokens, prompt } = request;
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`n must be an integer >= 1, got ${n}`);
    if (!Number.isInteger(maxTokens) || maxTokens < 0)
      throw new RangeError(`maxTokens must be an integer >= 0, got ${maxTokens}`);
    validateSamplingParams(request);
    const vocab = config.vocabSize;
    const badToken = prompt.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (prompt.length === 0) throw new RangeError('prompt must contain at least one token');
    if (badToken >= 0)
      throw new RangeError(
        `prompt[${badToken}] = ${prompt[badToken]} is outside the vocabulary (${vocab})`,
      );
    const seed = request.seed ?? this.options.seedSource?.() ?? randomInt(2 ** 31);
    if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
    const stopTokenIds = [...(request.stopTokenIds ?? []), this.options.eosTokenId ?? 256];
    const chunks = Math.max(1, Math.min(this.slots.length, Math.floor(n / MIN_SAMPLES_PER_CHUNK)));
    const out: GenerateRequest[] = [];
    for (let c = 0, start = 0; c < chunks; c++) {
      const size = Math.floor(n / chunks) + (c < n % chunks ? 1 : 0);
      const seeds = Array.from({ length: size }, (_, i) => (seed + start + i) >>> 0); // sample k: seed + k
      out.push({
        prompt: [...prompt],
        n: size,
        maxTokens,
        temperature: request.temperature,
        topP: request.topP,
        seeds,
        stopTokenIds,
      });
      start += size;
    }
    return out;
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (slot.job || this.queue.length === 0) continue;
      const job = this.queue.shift()!;
      slot.job = job;
      Atomics.store(slot.abortFlag, 0, 0);
      slot.worker
        .call<ScoredSequence[]>({
          type: 'sample',
          name: job.name,
          request: job.request,
        } satisfies SamplerMessage)
        .then(job.resolve, job.reject)
        .finally(() => {
          slot.job = null;
          this.dispatch();
        });
    }
  }

  private abort(signal: AbortSignal): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      if (this.queue[i]!.signal === signal) this.queue.splice(i, 1)[0]!.reject(abortError());
    }
    for (const slot of this.slots)
      if (slot.job?.signal === signal) Atomics.store(slot.abortFlag, 0, 1);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('inference engine closed'));
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}

function abortError(): Error {
  return Object.assign(new Error('sampling aborted'), { name: 'AbortError' });
}
