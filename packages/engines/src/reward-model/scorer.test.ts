import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Transformer } from '../embedded/model.ts';
import { exportOnnx } from '../embedded/onnx-export.ts';
import { GraphBuilder } from '../embedded/onnx-graph.ts';
import { DataType, encodeModel, valueInfo } from '../embedded/onnx-proto.ts';
import { randomParams, smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';
import { preferenceProbability } from './preference.ts';
import { OnnxRewardScorer } from './scorer.ts';

const config = smallConfig('value', 64);
const params = randomParams(config, 31);
const ts = new Transformer(config, params);
const bytes = (s: string) => Array.from(Buffer.from(s));

describe('OnnxRewardScorer with an export of the embedded value-head model', () => {
  it('scores prompt + response in length-sorted batches, in input order, as model.ts does', async () => {
    await withTempDir(async (dir) => {
      await exportOnnx(dir, config, params);
      const scorer = await OnnxRewardScorer.create({ modelPath: dir, batchSize: 2 });
      try {
        expect(scorer.description.lengthInput).toBe('lengths');
        const pairs = [
          { prompt: bytes('Q: capital of France? '), response: bytes('Paris.') },
          { prompt: bytes('Q: 2+2? '), response: bytes('4') },
          { prompt: bytes('Q: capital of France? '), response: bytes('It is Paris, of course!') },
          { prompt: [262], response: [263] },
          { prompt: bytes('Q: 2+2? '), response: bytes('five') },
        ];
        const scores = await scorer.score(pairs);
        const expected = pairs.map((p) => ts.forward([...p.prompt, ...p.response]).score);
        scores.forEach((s, i) => expect(Math.abs(s - expected[i]!)).toBeLessThan(1e-4));
        expect(new Set(expected.map((e) => e.toFixed(5))).size).toBe(5);

        const [p] = await scorer.preference([
          { prompt: pairs[0]!.prompt, response: pairs[0]!.response, reference: pairs[2]!.response },
        ]);
        expect(p).toBeCloseTo(1 / (1 + Math.exp(-(expected[0]! - expected[2]!))), 4);
        await expect(
          scorer.score([{ prompt: bytes('x'.repeat(70)), response: bytes('abc') }]),
        ).rejects.toThrow(/at most 64/);
        await expect(scorer.score([{ prompt: [-1], response: [] }])).rejects.toThrow(/pairs\[0\]/);
      } finally {
        await scorer.close();
      }
    });
  });

  it('accepts models that take attention_mask and answer [batch, 1]', async () => {
    // a stand-in "user export": score = number of real tokens (Σ attention_mask)
    const g = new GraphBuilder();
    g.input(valueInfo('input_ids', DataType.INT64, ['batch', 'seq']));
    const mask = g.input(valueInfo('attention_mask', DataType.INT64, ['batch', 'seq']));
    const counted = g.node(
      'ReduceSum',
      [g.node('Cast', [mask], { to: { int: DataType.FLOAT } }), g.int64('axes', [1])],
      { keepdims: { int: 1 } },
      'score',
    );
    expect(counted).toBe('score');
    const model = g.build('count', [valueInfo('score', DataType.FLOAT, ['batch', 1])], 'test');
    await withTempDir(async (dir) => {
      const file = path.join(dir, 'user.onnx');
      await writeFile(file, encodeModel(model, 'test'));
      const scorer = await OnnxRewardScorer.create({ modelPath: file, padTokenId: 7 });
      try {
        expect(scorer.description.lengthInput).toBe('attention_mask');
        const scores = await scorer.score([
          { prompt: [1, 2, 3], response: [4] },
          { prompt: [1], response: [] },
        ]);
        expect(Array.from(scores)).toEqual([4, 1]);
      } finally {
        await scorer.close();
      }
    });
  });

  it('fails clearly for an LM export, a missing file, and an unavailable CUDA provider', async () => {
    await withTempDir(async (dir) => {
      const lm = smallConfig('lm', 16);
      await exportOnnx(dir, lm, randomParams(lm, 1));
      await expect(OnnxRewardScorer.create({ modelPath: dir })).rejects.toThrow(
        /expected input_ids plus lengths or attention_mask/,
      );
      await expect(
        OnnxRewardScorer.create({ modelPath: path.join(dir, 'nope.onnx') }),
      ).rejects.toThrow(/not found/);
      const cuda = OnnxRewardScorer.create({
        modelPath: path.join(dir, 'model.onnx'),
        executionProvider: 'cuda',
      });
      await expect(cuda).rejects.toThrow(/on cuda \(is the CUDA build/);
    });
  });

  it('P̄ is position-agnostic: P̄(a, b) + P̄(b, a) = 1, and ½ at a tie', () => {
    expect(preferenceProbability(1.5, -0.5) + preferenceProbability(-0.5, 1.5)).toBeCloseTo(1, 12);
    expect(preferenceProbability(2, 2)).toBe(0.5);
    expect(preferenceProbability(1, 0)).toBeCloseTo(1 / (1 + Math.exp(-1)), 12);
  });
});
