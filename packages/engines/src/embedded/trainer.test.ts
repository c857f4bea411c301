import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdamParams, Datum } from '../types.ts';
import { DEFAULT_ADAM_PARAMS } from './optimizer.ts';
import { smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';
import { EmbeddedTrainer } from './trainer.ts';

const { head: _head, ...tiny } = smallConfig('lm', 32);
const adam: AdamParams = { ...DEFAULT_ADAM_PARAMS, learningRate: 3e-3, gradClipNorm: 1 };
let dir: string;
let release: () => void;
let trainer: EmbeddedTrainer;

beforeAll(async () => {
  await new Promise<void>((ready) => {
    void withTempDir(async (d) => {
      dir = d;
      ready();
      await new Promise<void>((done) => (release = done));
    });
  });
  trainer = new EmbeddedTrainer({ artifactDir: dir, threads: 2, baseModels: { tiny } });
});
afterAll(async () => {
  await trainer.close();
  release();
});

/** Copy task: <|user|> w <|assistant|> w <|eos|>, loss on the completion only (docs/recipe.md §1). */
function copyDatum(word: string): Datum {
  const w = Array.from(Buffer.from(word));
  const tokens = [262, ...w, 263, ...w, 256];
  const completionStart = w.length + 2;
  return {
    modelInput: tokens.slice(0, -1),
    lossFnInputs: {
      target_tokens: Int32Array.from(tokens.slice(1)),
      weights: Float32Array.from(tokens.slice(1), (_, t) => (t + 1 >= completionStart ? 1 : 0)),
    },
  };
}
const words = ['abc', 'hello', 'xyz', 'copy', 'token', 'rl', 'grpo', 'adam'];

describe('EmbeddedTrainer', () => {
  it('learns a toy copy task in a few SFT steps', async () => {
    const model = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 1 });
    const batch = words.map(copyDatum);
    const losses: number[] = [];
    for (let step = 0; step < 25; step++) {
      const result = await model.forwardBackward(batch, 'cross_entropy');
      losses.push(result.metrics['loss:sum']!);
      const { gradNorm } = await model.optimStep(adam);
      expect(Number.isFinite(gradNorm)).toBe(true);
    }
    expect(losses.at(-1)!).toBeLessThan(0.5 * losses[0]!);
  });

  it('gives the same results on 1 and 2 threads (the batch split is exact)', async () => {
    const single = new EmbeddedTrainer({ artifactDir: dir, threads: 1, baseModels: { tiny } });
    try {
      const a = await single.createModel({ baseModel: 'tiny', loraRank: 0, seed: 2 });
      const b = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 2 });
      const batch = [...words, ...words].map(copyDatum); // enough tokens to split
      const ra = await a.forwardBackward(batch, 'cross_entropy');
      const rb = await b.forwardBackward(batch, 'cross_entropy');
      expect(rb.metrics['loss:sum']).toBeCloseTo(ra.metrics['loss:sum']!, 4);
      // eps 1e-4: with eps 1e-12 Adam is sign-like for ~0 gradients, whose sign depends on the
      // summation order across threads; a larger eps compares the gradients themselves
      const smooth = { ...adam, eps: 1e-4 };
      const [sa, sb] = [await a.optimStep(smooth), await b.optimStep(smooth)];
      expect(sb.gradNorm!).toBeCloseTo(sa.gradNorm!, 5);
      let maxDiff = 0;
      for (let i = 0; i < a.params.length; i++)
        maxDiff = Math.max(maxDiff, Math.abs(a.params[i]! - b.params[i]!));
      expect(maxDiff).toBeLessThan(1e-5);
    } finally {
      await single.close();
    }
  });

  it('saves and restores weights + optimizer state; an LM checkpoint seeds a value model', async () => {
    const model = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 3 });
    const batch = words.slice(0, 4).map(copyDatum);
    await model.forwardBackward(batch, 'cross_entropy');
    await model.optimStep(adam);
    const saved = await model.saveWeights('step-1');
    expect(saved).toBe(path.join(dir, model.id, 'weights', 'step-1'));
    const restored = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 99 });
    await restored.loadWeights(saved, { optimizer: true });
    const before = await model.forward(batch, 'cross_entropy');
    expect((await restored.forward(batch, 'cross_entropy')).logprobs).toEqual(before.logprobs);
    // the same next step on both: equal only if the Adam moments were restored too
    await model.forwardBackward(batch, 'cross_entropy');
    await restored.forwardBackward(batch, 'cross_entropy');
    await model.optimStep(adam);
    await restored.optimStep(adam);
    expect(Array.from(restored.params)).toEqual(Array.from(model.params));

    const value = await trainer.createModel({
      baseModel: saved,
      loraRank: 0,
      head: 'value',
      seed: 4,
    });
    const wte = value.layout.byName.get('wte')!;
    const source = model.layout.byName.get('wte')!;
    expect(value.params[wte.offset + 5]).not.toBe(0);
    expect(value.config.head).toBe('value');
    expect(source.size).toBe(wte.size);
    await expect(model.loadWeights(path.join(dir, 'nowhere'), { optimizer: true })).rejects.toThrow(
      /not an embedded checkpoint/,
    );
  });

  it('a fork (optimizer: false) whose advantages are all 0 keeps the parent weights bit for bit; the parent optimizer moves them', async () => {
    const parent = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 6 });
    const batch = words.slice(0, 4).map(copyDatum);
    for (let i = 0; i < 3; i++) {
      await parent.forwardBackward(batch, 'cross_entropy');
      await parent.optimStep(adam);
    }
    const saved = await parent.saveWeights('fork-parent');
    const parentParams = Array.from(parent.params);
    /** The batch as GRPO data whose every advantage is 0 (no learning signal). */
    const zeroAdvantage = batch.map((d) => {
      const targets = d.lossFnInputs['target_tokens']!;
      return {
        modelInput: d.modelInput,
        lossFnInputs: {
          target_tokens: targets,
          logprobs: new Float32Array(targets.length).fill(-1),
          advantages: new Float32Array(targets.length),
        },
      };
    });
    const run = async (optimizer: boolean) => {
      const fork = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 7 });
      await fork.loadWeights(saved, { optimizer });
      for (let i = 0; i < 3; i++) {
        await fork.forwardBackward(zeroAdvantage, 'importance_sampling');
        await fork.optimStep(adam);
      }
      return Array.from(fork.params);
    };
    expect(await run(false)).toEqual(parentParams);
    const withMoments = await run(true);
    expect(withMoments.filter((p, i) => p !== parentParams[i]).length).toBeGreaterThan(0);
  });

  it('trains a Bradley–Terry value model on pairs (symmetric loss, pair accuracy)', async () => {
    const model = await trainer.createModel({
      baseModel: 'tiny',
      loraRank: 0,
      head: 'value',
      seed: 5,
    });
    // latent preference: responses ending in '.' beat those ending in '!'
    const pair = (prompt: string, swapped: boolean): Datum[] => {
      const good = Array.from(Buffer.from(`${prompt} ok.`));
      const bad = Array.from(Buffer.from(`${prompt} ok!`));
      const [a, b] = swapped ? [bad, good] : [good, bad];
      const r = swapped ? 0 : 1; // r = 1 when the first response is preferred
      return [
        { modelInput: a, lossFnInputs: { label: new Float32Array(a.length).fill(r) } },
        { modelInput: b, lossFnInputs: {} },
      ];
    };
    const batch = ['hi', 'yo', 'hey', 'sup'].flatMap((p, i) => pair(p, i % 2 === 1));
    const first = await model.forwardBackward(batch, 'bradley_terry');
    await model.optimStep(adam);
    let last = first;
    for (let step = 0; step < 15; step++) {
      last = await model.forwardBackward(batch, 'bradley_terry');
      await model.optimStep(adam);
    }
    expect(first.logprobs[0]).toHaveLength(1); // one score per datum
    expect(last.metrics['loss:sum']!).toBeLessThan(first.metrics['loss:sum']!);
    expect(last.metrics['pair_accuracy:mean']).toBe(1);
    await expect(model.forward(batch.slice(0, 3), 'bradley_terry')).rejects.toThrow(/pairs/);
    await expect(model.forward(batch, 'cross_entropy')).rejects.toThrow(/target_tokens/);
  });

  it('exports sampler weights and names bad inputs', async () => {
    const model = await trainer.createModel({ baseModel: 'tiny', loraRank: 0 });
    const weights = await model.saveWeightsForSampler('s0');
    expect(existsSync(path.join(weights.path, 'decoder.onnx'))).toBe(true);
    expect(existsSync(path.join(weights.path, 'model.onnx'))).toBe(true);
    const datum = copyDatum('abc');
    await expect(model.forward([datum], 'importance_sampling')).rejects.toThrow(
      /data\[0\]\.loss_fn_inputs\.logprobs: required/,
    );
    await expect(model.saveWeights('../escape')).rejects.toThrow(/checkpoint name/);
    await expect(trainer.createModel({ baseModel: 'gpt-9', loraRank: 0 })).rejects.toThrow(
      /base_model 'gpt-9'/,
    );
    await expect(model.optimStep({ ...adam, learningRate: -1 })).rejects.toThrow(/learning_rate/);
  });

  it('deletes a saved checkpoint of any of its models, once; refuses a path that is not one', async () => {
    const first = await trainer.createModel({ baseModel: 'tiny', loraRank: 0 });
    const other = await trainer.createModel({ baseModel: 'tiny', loraRank: 0 });
    const saved = await first.saveWeights('to-delete');
    expect(existsSync(saved)).toBe(true);
    expect(await other.deleteWeights!(saved)).toBe(true); // retention: an earlier model's
    expect(existsSync(saved)).toBe(false);
    expect(await first.deleteWeights!(saved)).toBe(false); // already gone
    const sampler = await first.saveWeightsForSampler('not-weights');
    await expect(first.deleteWeights!(sampler.path)).rejects.toThrow(/is not <artifactDir>/);
    await expect(first.deleteWeights!(path.join(dir, '..', 'x', 'weights', 'y'))).rejects.toThrow(
      /is not <artifactDir>/,
    );
    expect(existsSync(sampler.path)).toBe(true);
  });

  it('refuses a non-finite advantage or logprob, naming the datum: never a NaN update', async () => {
    const model = await trainer.createModel({ baseModel: 'tiny', loraRank: 0, seed: 3 });
    const isDatum = (advantage: number, logprob = -1): Datum => {
      const { modelInput, lossFnInputs } = copyDatum('abc');
      const n = modelInput.length;
      return {
        modelInput,
        lossFnInputs: {
          target_tokens: lossFnInputs['target_tokens']!,
          logprobs: new Float32Array(n).fill(logprob),
          advantages: new Float32Array(n).fill(0).fill(advantage, n - 2),
        },
      };
    };
    const before = await model.forward([isDatum(0)], 'importance_sampling');
    await expect(
      model.forwardBackward([isDatum(0.1), isDatum(Number.NaN)], 'importance_sampling'),
    ).rejects.toThrow('data[1].loss_fn_inputs.advantages[6]: must be finite, got NaN');
    await expect(
      model.forwardBackward([isDatum(0.1, -Infinity)], 'importance_sampling'),
    ).rejects.toThrow('data[0].loss_fn_inputs.logprobs[0]: must be finite, got -Infinity');
    const weights = copyDatum('abc');
    weights.lossFnInputs['weights']![2] = Infinity;
    await expect(model.forwardBackward([weights], 'cross_entropy')).rejects.toThrow(
      'data[0].loss_fn_inputs.weights[2]: must be finite, got Infinity',
    );
    // nothing was accumulated: an optimiser step leaves the weights as they were
    await model.optimStep(adam);
    const after = await model.forward([isDatum(0)], 'importance_sampling');
    expect([...after.logprobs[0]!]).toEqual([...before.logprobs[0]!]);
  });
});
