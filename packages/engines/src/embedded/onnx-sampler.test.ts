import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transformer } from './model.ts';
import { exportOnnx } from './onnx-export.ts';
import { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import { randomParams, smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';

const config = smallConfig('lm', 48);
const params = randomParams(config, 21, 0.3);
const prompt = [257, 72, 105, 33, 32];
let engine: EmbeddedInferenceEngine;
let cleanup: () => void;

beforeAll(async () => {
  engine = new EmbeddedInferenceEngine({ threads: 2, eosTokenId: 256 });
  await new Promise<void>((ready) => {
    void withTempDir(async (dir) => {
      await exportOnnx(dir, config, params);
      await engine.loadWeights({ name: 'base', path: dir });
      ready();
      await new Promise<void>((done) => (cleanup = done)); // keep the dir until afterAll
    });
  });
});
afterAll(async () => {
  await engine.close();
  cleanup();
});

describe('EmbeddedInferenceEngine (onnxruntime in worker threads)', () => {
  it('is deterministic for a seed, and sample k uses seed + k', async () => {
    const request = { prompt, n: 6, maxTokens: 12, temperature: 1, topP: 0.95, seed: 100 };
    const a = await engine.sample(request);
    const b = await engine.sample(request);
    expect(a.map((s) => s.tokens)).toEqual(b.map((s) => s.tokens));
    const third = await engine.sample({ ...request, n: 1, seed: 102 });
    expect(third[0]!.tokens).toEqual(a[2]!.tokens);
    expect(third[0]!.logprobs).toEqual(a[2]!.logprobs);
    expect(new Set(a.map((s) => s.tokens.join(','))).size).toBeGreaterThan(1); // samples differ
  });

  it('stops on stop tokens (kept in the output), on eos, on maxTokens and at the context limit', async () => {
    const greedy = { prompt, n: 2, maxTokens: 5, temperature: 0, topP: 1, seed: 1 };
    const free = await engine.sample(greedy);
    expect(free.every((s) => s.tokens.length === 5 && s.finishReason === 'length')).toBe(true);
    const stopAt = free[0]!.tokens[2]!;
    const firstStop = free[0]!.tokens.indexOf(stopAt);
    const stopped = await engine.sample({ ...greedy, stopTokenIds: [stopAt] });
    expect(stopped[0]!.finishReason).toBe('stop');
    expect(stopped[0]!.tokens).toEqual(free[0]!.tokens.slice(0, firstStop + 1));
    expect(stopped[0]!.logprobs).toHaveLength(firstStop + 1);
    const eosEngine = new EmbeddedInferenceEngine({ threads: 1, eosTokenId: stopAt });
    try {
      await withTempDir(async (dir) => {
        await exportOnnx(dir, config, params);
        await eosEngine.loadWeights({ name: 'base', path: dir });
        const eos = await eosEngine.sample(greedy);
        expect(eos[0]!.finishReason).toBe('stop');
        expect(eos[0]!.tokens.at(-1)).toBe(stopAt);
      });
    } finally {
      await eosEngine.close();
    }
    const long = Array.from({ length: config.blockSize - 3 }, (_, i) => 97 + (i % 20));
    const overflow = await engine.sample({
      ...greedy,
      prompt: long,
      maxTokens: 50,
      stopTokenIds: [],
    });
    expect(overflow[0]!.tokens).toHaveLength(3);
    expect(overflow[0]!.finishReason).toBe('context_overflow');
  });

  it('returns logprobs within a tiny KL of the TypeScript trainer forward (the real mismatch)', async () => {
    const samples = await engine.sample({
      prompt,
      n: 8,
      maxTokens: 30,
      temperature: 1,
      topP: 1,
      seed: 7,
    });
    const ts = new Transformer(config, params);
    let k3 = 0;
    let count = 0;
    for (const s of samples) {
      const full = [...prompt, ...s.tokens];
      const acts = ts.forward(full.slice(0, -1));
      const trainLogp = ts.tokenLogprobs(acts, full.slice(1));
      s.tokens.forEach((_, i) => {
        const d = s.logprobs[i]! - trainLogp[prompt.length - 1 + i]!; // logp_infer − logp_train
        k3 += Math.exp(-d) - 1 + d;
        count++;
      });
    }
    k3 /= count;
    expect(count).toBeGreaterThan(8);
    expect(k3).toBeGreaterThanOrEqual(0);
    expect(k3).toBeLessThan(1e-8);
  });

  it('aborts through an AbortSignal and rejects unknown weights and bad requests', async () => {
    const controller = new AbortController();
    const pending = engine.sample(
      { prompt, n: 4, maxTokens: 40, temperature: 1, topP: 1, seed: 1 },
      controller.signal,
    );
    controller.abort();
    await expect(pending).rejects.toThrow(/aborted/);
    await expect(
      engine.sample({ prompt, n: 1, maxTokens: 4, temperature: 1, topP: 1, model: 'nope' }),
    ).rejects.toThrow(/no weights loaded under the name 'nope'/);
    await expect(
      engine.sample({ prompt: [999], n: 1, maxTokens: 4, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/prompt\[0\]/);
    await expect(
      engine.sample({ prompt, n: 0, maxTokens: 4, temperature: 1, topP: 1 }),
    ).rejects.toThrow(/n must be/);
    const ok = await engine.sample({
      prompt,
      n: 1,
      maxTokens: 2,
      temperature: 1,
      topP: 1,
      seed: 3,
    });
    expect(ok[0]!.tokens).toHaveLength(2); // the pool still works after an abort
  });

  it('loadWeights under a new name serves new weights alongside the base', async () => {
    const other = randomParams(config, 99, 0.3);
    await withTempDir(async (dir) => {
      await exportOnnx(dir, config, other);
      await engine.loadWeights({ name: 'step-1', path: dir });
      const request = { prompt, n: 3, maxTokens: 8, temperature: 0, topP: 1, seed: 1 };
      const base = await engine.sample(request);
      const synced = await engine.sample({ ...request, model: 'step-1' });
      expect(synced.map((s) => s.tokens)).not.toEqual(base.map((s) => s.tokens));
    });
  });
});
