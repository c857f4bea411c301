// Autoregressive generation with the exported decoder (decoder.onnx, KV cache): one prefill of
// the prompt at batch 1, the cache tiled to the n samples, then one token per step for the
// sequences still running. Runs inside a sampler worker thread (ORT run() is CPU-bound).
import type { InferenceSession } from 'onnxruntime-node';
import { Tensor } from 'onnxruntime-node';
import type { FinishReason, ScoredSequence } from '../types.ts';
import type { ModelConfig } from './params.ts';
import { createRng } from './rng.ts';
import { sampleToken, validateSamplingParams } from './sampling.ts';

export interface GenerateRequest {
  prompt: number[];
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  /** Sample k draws from a generator seeded with seeds[k] (= seed + k). */
  seeds: number[];
  /** Stop token ids, eos included; the stop token is kept in the output (it is trained on). */
  stopTokenIds: number[];
}

/** Returns true when the caller aborted the request (checked between decode steps). */
export type AbortCheck = () => boolean;

/** Per layer: key and value caches, each (batch, H, length, hs). */
type Cache = Tensor[];

function selectRows(cache: Cache, rows: number[], sourceRows: number): Cache {
  return cache.map((t) => {
    const data = t.data as Float32Array;
    const rowSize = data.length / sourceRows;
    const out = new Float32Array(rows.length * rowSize);
    rows.forEach((r, i) => out.set(data.subarray(r * rowSize, (r + 1) * rowSize), i * rowSize));
    return new Tensor('float32', out, [rows.length, ...t.dims.slice(1)]);
  });
}

function ids(values: number[], batch: number): Tensor {
  return new Tensor(
    'int64',
    BigInt64Array.from(values, (v) => BigInt(v)),
    [batch, values.length / batch],
  );
}

export async function generate(
  session: InferenceSession,
  config: ModelConfig,
  req: GenerateRequest,
  aborted: AbortCheck,
): Promise<ScoredSequence[]> {
  validateSamplingParams(req);
  const { vocabSize: V, blockSize, nLayer, nHead: H, nEmbd: C } = config;
  const out: ScoredSequence[] = Array.from({ length: req.n }, () => ({
    tokens: [],
    logprobs: [],
    finishReason: 'length' as FinishReason,
  }));
  if (req.prompt.length === 0) throw new RangeError('prompt must contain at least one token');
  if (req.prompt.length >= blockSize) {
    for (const s of out) s.finishReason = 'context_overflow';
    return out;
  }
  if (req.maxTokens <= 0 || req.n === 0) return out;
  const stop = new Set(req.stopTokenIds);
  const rngs = req.seeds.map((s) => createRng(s));
  const scratch = new Float64Array(2 * V);
  const order = new Int32Array(V);
  // prefill at batch 1, then tile the cache to n rows
  const empty = new Tensor('float32', new Float32Array(0), [1, H, 0, C / H]);
  const feeds: Record<string, Tensor> = { input_ids: ids(req.prompt, 1) };
  for (let l = 0; l < nLayer; l++) feeds[`past_key_${l}`] = feeds[`past_value_${l}`] = empty;
  let result = await session.run(feeds);
  let cache: Cache = [];
  for (let l = 0; l < nLayer; l++)
    cache.push(result[`present_key_${l}`]!, result[`present_value_${l}`]!);
  cache = selectRows(cache, new Array<number>(req.n).fill(0), 1);
  let logits = result.logits!.data as Float32Array; // (1, P, V): the last row predicts token 1
  let rowOffset = (req.prompt.length - 1) * V;
  let rowStride = 0; // every sample reads the same prefill row
  let active = Array.from({ length: req.n }, (_, k) => k);
  while (active.length > 0) {
    if (aborted()) throw Object.assign(new Error('sampling aborted'), { name: 'AbortError' });
    const next: number[] = [];
    const keep: number[] = []; // row indices (into the current batch) still running
    active.forEach((k, row) => {
      const sampled = sampleToken(
        logits,
        rowOffset + row * rowStride,
        V,
        req,
        rngs[k]!,
        scratch,
        order,
      );
      const seq = out[k]!;
      seq.tokens.push(sampled.token);
      seq.logprobs.push(sampled.logprob);
      if (stop.has(sampled.token)) seq.finishReason = 'stop';
      else if (seq.tokens.length >= req.maxTokens) seq.finishReason = 'length';
      else if (req.prompt.length + seq.tokens.length >= blockSize)
        seq.finishReason = 'context_overflow';
      else {
        keep.push(row);
        next.push(sampled.token);
      }
    });
    if (keep.length === 0) break;
    if (keep.length < active.length) cache = selectRows(cache, keep, active.length);
    active = keep.map((row) => active[row]!);
    const stepFeeds: Record<string, Tensor> = { input_ids: ids(next, next.length) };
    for (let l = 0; l < nLayer; l++) {
      stepFeeds[`past_key_${l}`] = cache[2 * l]!;
      stepFeeds[`past_value_${l}`] = cache[2 * l + 1]!;
    }
    result = await session.run(stepFeeds);
    cache = [];
    for (let l = 0; l < nLayer; l++)
      cache.push(result[`present_key_${l}`]!, result[`present_value_${l}`]!);
    logits = result.logits!.data as Float32Array; // (A, 1, V)
    rowOffset = 0;
    rowStride = V;
  }
  return out;
}
