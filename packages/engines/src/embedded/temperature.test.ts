// μ_infer and π_train on the same distribution (docs/engines.md "Logprobs and temperature"): the
// ONNX sampler reports the processed logprob (after temperature and top-p) of each sampled token;
// the trainer, given the same temperature in loss_fn_config, scores log-softmax(logits / T).
// At top-p 1 the two then differ only by kernel noise, which is what the IS ratio and the
// train–inference KL of docs/recipe.md §2 are meant to measure.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Datum } from '../types.ts';
import { EmbeddedInferenceEngine } from './onnx-sampler.ts';
import { parseLossCall } from './server-wire.ts';
import { randomParams, smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';
import { EmbeddedTrainer } from './trainer.ts';
import type { EmbeddedTrainerModel } from './trainer-model.ts';

const config = smallConfig('lm', 48);
const { head: _head, ...tiny } = config;
const prompt = [257, 72, 105, 33, 32];
let trainer: EmbeddedTrainer;
let sampler: EmbeddedInferenceEngine;
let model: EmbeddedTrainerModel;
let cleanup: () => void;

beforeAll(async () => {
  await new Promise<void>((ready) => {
    void withTempDir(async (dir) => {
      trainer = new EmbeddedTrainer({ artifactDir: dir, threads: 1, baseModels: { tiny } });
      model = await trainer.createModel({ baseModel: 'tiny', loraRank: 1 });
      model.params.set(randomParams(config, 5, 0.3)); // peaked logits: temperature matters
      const weights = await model.saveWeightsForSampler('policy');
      sampler = new EmbeddedInferenceEngine({ threads: 1, eosTokenId: 256 });
      await sampler.loadWeights(weights);
      ready();
      await new Promise<void>((done) => (cleanup = done));
    });
  });
});
afterAll(async () => {
  await sampler.close();
  await trainer.close();
  cleanup();
});

interface Mismatch {
  k3: number;
  ratioMean: number;
}

/** Samples at (T, top-p), scores the same tokens with the trainer, returns k3 and mean ratio. */
async function mismatch(temperature: number, topP: number, scoreAt?: number): Promise<Mismatch> {
  const seqs = await sampler.sample({ prompt, n: 8, maxTokens: 24, temperature, topP, seed: 9 });
  const data: Datum[] = seqs.map((s) => {
    const tokens = [...prompt, ...s.tokens];
    const mu = new Float32Array(tokens.length - 1);
    s.logprobs.forEach((lp, k) => (mu[prompt.length - 1 + k] = lp));
    return {
      modelInput: tokens.slice(0, -1),
      lossFnInputs: {
        target_tokens: Int32Array.from(tokens.slice(1)),
        logprobs: mu,
        advantages: new Float32Array(tokens.length - 1),
      },
    };
  });
  const result = await model.forward(
    data,
    'importance_sampling',
    scoreAt === undefined ? {} : { temperature: scoreAt },
  );
  let k3 = 0;
  let ratio = 0;
  let n = 0;
  seqs.forEach((s, i) => {
    s.logprobs.forEach((mu, k) => {
      const d = mu - result.logprobs[i]![prompt.length - 1 + k]!; // logp_infer − logp_train
      k3 += Math.exp(-d) - 1 + d;
      ratio += Math.exp(-d);
      n++;
    });
  });
  return { k3: k3 / n, ratioMean: ratio / n };
}

describe('sampler and trainer report the same μ', () => {
  it('at T = 0.6, top-p 1: scoring at T = 1 measures the temperature; at T = 0.6 only noise', async () => {
    const atOne = await mismatch(0.6, 1);
    const matched = await mismatch(0.6, 1, 0.6);
    expect(atOne.k3).toBeGreaterThan(1e-2);
    expect(matched.k3).toBeLessThan(1e-6);
    expect(Math.abs(matched.ratioMean - 1)).toBeLessThan(1e-3);
  });

  it('at T = 1 the default scoring already matches', async () => {
    const plain = await mismatch(1, 1);
    expect(plain.k3).toBeLessThan(1e-6);
  });

  it('top-p < 1 cannot be matched by temperature: the ratio keeps the truncation bias', async () => {
    const truncated = await mismatch(1, 0.9, 1);
    expect(truncated.ratioMean).toBeLessThan(0.99); // π/μ = kept mass < 1 on every token
  });
});

describe('loss_fn_config.temperature on the wire', () => {
  const body = (config: unknown) => ({
    forward_input: {
      loss_fn: 'importance_sampling',
      data: [{ model_input: { chunks: [{ type: 'encoded_text', tokens: [1] }] } }],
      loss_fn_config: config,
    },
  });

  it('is parsed into the loss config', () => {
    expect(parseLossCall(body({ temperature: 0.6 }), 'forward_input').config).toEqual({
      temperature: 0.6,
    });
  });

  it('must be a number', () => {
    expect(() => parseLossCall(body({ temperature: 'hot' }), 'forward_input')).toThrow(
      /loss_fn_config.temperature/,
    );
  });
});
