import { InferenceSession, Tensor } from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { Transformer } from './model.ts';
import { exportOnnx } from './onnx-export.ts';
import { randomParams, smallConfig, withTempDir } from '../../test/embedded/fixtures.ts';

const int64 = (rows: number[][]) =>
  new Tensor(
    'int64',
    BigInt64Array.from(rows.flat(), (v) => BigInt(v)),
    [rows.length, rows[0]!.length],
  );

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

describe('ONNX export runs in onnxruntime with the TypeScript forward numbers', () => {
  it('LM model.onnx: logits [B, T, V] match model.ts to 1e-4', async () => {
    const config = smallConfig('lm');
    const params = randomParams(config, 11);
    const ts = new Transformer(config, params);
    const rows = [
      [72, 101, 108, 108, 111, 44, 32, 256, 257, 119, 111, 114],
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 263, 0],
    ];
    await withTempDir(async (dir) => {
      const { model } = await exportOnnx(dir, config, params);
      const session = await InferenceSession.create(model);
      const out = await session.run({ input_ids: int64(rows) });
      expect(out.logits!.dims).toEqual([2, 12, 264]);
      const logits = out.logits!.data as Float32Array;
      const expected = new Float32Array(2 * 12 * 264);
      rows.forEach((row, b) => expected.set(ts.forward(row).logits!, b * 12 * 264));
      expect(maxAbsDiff(logits, expected)).toBeLessThan(1e-4);
      await session.release();
    });
  });

  it('LM decoder.onnx: prefill + cached steps equal the full forward', async () => {
    const config = smallConfig('lm');
    const params = randomParams(config, 12);
    const tokens = [5, 80, 81, 82, 90, 91, 256, 33, 34];
    const full = new Transformer(config, params).forward(tokens).logits!;
    await withTempDir(async (dir) => {
      const { decoder } = await exportOnnx(dir, config, params);
      const session = await InferenceSession.create(decoder!);
      const empty = new Tensor('float32', new Float32Array(0), [1, 2, 0, 16]);
      const feeds: Record<string, Tensor> = { input_ids: int64([tokens.slice(0, 6)]) };
      for (let l = 0; l < 2; l++) feeds[`past_key_${l}`] = feeds[`past_value_${l}`] = empty;
      const prefill = await session.run(feeds);
      expect(
        maxAbsDiff(prefill.logits!.data as Float32Array, full.subarray(0, 6 * 264)),
      ).toBeLessThan(1e-4);
      let past = prefill;
      for (let t = 6; t < tokens.length; t++) {
        const step: Record<string, Tensor> = { input_ids: int64([[tokens[t]!]]) };
        for (let l = 0; l < 2; l++) {
          step[`past_key_${l}`] = past[`present_key_${l}`]!;
          step[`past_value_${l}`] = past[`present_value_${l}`]!;
        }
        past = await session.run(step);
        expect(past.present_key_0!.dims).toEqual([1, 2, t + 1, 16]);
        const row = full.subarray(t * 264, (t + 1) * 264);
        expect(maxAbsDiff(past.logits!.data as Float32Array, row)).toBeLessThan(1e-4);
      }
      await session.release();
    });
  });

  it('value model.onnx: score [B] at lengths − 1 of right-padded rows matches model.ts', async () => {
    const config = smallConfig('value');
    const params = randomParams(config, 13);
    const ts = new Transformer(config, params);
    const sequences = [[10, 20, 30, 40, 50, 60], [10, 20, 31], [7]];
    const padded = sequences.map((s) => [...s, ...new Array<number>(6 - s.length).fill(256)]);
    await withTempDir(async (dir) => {
      const { model } = await exportOnnx(dir, config, params);
      const session = await InferenceSession.create(model);
      const lengths = new Tensor(
        'int64',
        BigInt64Array.from(sequences, (s) => BigInt(s.length)),
        [3],
      );
      const out = await session.run({ input_ids: int64(padded), lengths });
      expect(out.score!.dims).toEqual([3]);
      const expected = sequences.map((s) => ts.forward(s).score);
      expect(maxAbsDiff(out.score!.data as Float32Array, expected)).toBeLessThan(1e-4);
      expect(new Set(expected).size).toBe(3); // distinct scores: the comparison means something
      await session.release();
    });
  });
});
