import { describe, expect, it } from 'vitest';
import { JsonBytesWriter } from '../http/json-text.ts';
import { checkWireDatum, fromWireForward, toWireLossConfig, writeWireDatum } from './convert.ts';
import { seededRng } from '../http/timing.ts';
import type * as Wire from './wire.ts';
import { combineMetrics, gradNormOf, parseMetricKey, parseMetrics } from './metrics.ts';

/** A datum's JSON as the client sends it. */
const datumJson = (datum: Parameters<typeof writeWireDatum>[1]): string => {
  checkWireDatum(datum, 0);
  const writer = new JsonBytesWriter();
  writeWireDatum(writer, datum);
  return new TextDecoder().decode(writer.finish());
};

describe('Tinker conversions', () => {
  it('sends the scoring temperature to the trainer when it is not 1 (else π_train is scored at T = 1)', () => {
    expect(toWireLossConfig({ temperature: 0.6 })).toEqual({ temperature: 0.6 });
    expect(toWireLossConfig({ temperature: 1 })).toBeUndefined();
    expect(
      toWireLossConfig({ clipLowThreshold: 0.8, clipHighThreshold: 1.2, temperature: 0.7 }),
    ).toEqual({
      clip_low_threshold: 0.8,
      clip_high_threshold: 1.2,
      temperature: 0.7,
    });
  });

  it('parses name:reduction metric keys', () => {
    expect(parseMetricKey('loss:sum')).toEqual({ name: 'loss', reduction: 'sum' });
    expect(parseMetricKey('clip_fraction:mean')).toEqual({
      name: 'clip_fraction',
      reduction: 'mean',
    });
    expect(parseMetricKey('skyrl.ai/grad_norm')).toEqual({
      name: 'skyrl.ai/grad_norm',
      reduction: undefined,
    });
    expect(parseMetricKey(':x')).toEqual({ name: ':x', reduction: undefined });
    expect(parseMetrics({ 'loss:sum': 2 })).toEqual([
      { key: 'loss:sum', value: 2, name: 'loss', reduction: 'sum' },
    ]);
  });

  it('combines chunk metrics by their reduction suffix', () => {
    const combined = combineMetrics([
      {
        metrics: { 'loss:sum': 1, 'kl:mean': 0.5, 'r:min': 2, 'r:max': 2, 'step:last': 1 },
        weight: 3,
      },
      {
        metrics: { 'loss:sum': 2, 'kl:mean': 0.1, 'r:min': 1, 'r:max': 5, 'step:last': 2 },
        weight: 1,
      },
    ]);
    expect(combined).toEqual({
      'loss:sum': 3,
      'kl:mean': (1.5 + 0.1) / 4,
      'r:min': 1,
      'r:max': 5,
      'step:last': 2,
    });
  });

  it('reads the grad norm only from what the backend reports', () => {
    expect(gradNormOf({ 'skyrl.ai/grad_norm': 3, 'skyrl.ai/learning_rate': 1e-4 })).toBe(3);
    expect(gradNormOf({ 'grad_norm:last': 2 })).toBe(2);
    expect(gradNormOf({ 'grad_norm:mean': 4 })).toBe(4);
    expect(gradNormOf({ 'loss:sum': 1 })).toBeNull();
  });

  it('rejects malformed forward results with the path of the bad field', () => {
    expect(() => fromWireForward({ loss_fn_outputs: [] }, 1)).toThrow('has 0 entries for 1 datums');
    expect(() => fromWireForward({ loss_fn_outputs: [{}] }, 1)).toThrow(
      'loss_fn_outputs[0].logprobs is missing',
    );
    const scores = fromWireForward(
      {
        loss_fn_outputs: [{ scores: { data: [0.5], dtype: 'float32' } }],
        metrics: { 'loss:mean': 1, x: null },
      },
      1,
    );
    expect(Array.from(scores.logprobs[0] ?? [])).toEqual([0.5]);
    expect(scores.metrics).toEqual({ 'loss:mean': 1 });
  });

  it('refuses a non-finite loss input before sending (JSON would carry it as null)', () => {
    const datum = (advantages: number[]) => ({
      modelInput: [1, 2, 3],
      lossFnInputs: {
        target_tokens: Int32Array.from([2, 3, 4]),
        logprobs: Float32Array.from([0, -1, -2]),
        advantages: Float32Array.from(advantages),
      },
    });
    expect(() => checkWireDatum(datum([0, Number.NaN, 0]), 2)).toThrow(
      'data[2].lossFnInputs.advantages[1] is NaN: a trainer takes finite numbers only',
    );
    expect(() => checkWireDatum(datum([0, 0, -Infinity]), 0)).toThrow(
      'data[0].lossFnInputs.advantages[2] is -Infinity',
    );
    const wire = JSON.parse(datumJson(datum([0, 0.5, 0]))) as Wire.Datum;
    expect(wire.loss_fn_inputs['advantages']!.data).toEqual([0, 0.5, 0]);
  });

  it('writes integers as JSON.stringify does at every digit-count boundary, int32 and past it', () => {
    const values = [0, -0, 1, -1, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 53 - 1, -(2 ** 53 - 1)];
    for (let k = 1; k <= 15; k += 1) values.push(10 ** k - 1, 10 ** k, 10 ** k + 1, -(10 ** k));
    const written = new TextDecoder().decode(
      new JsonBytesWriter().raw('[').numbers(values).raw(']').finish(),
    );
    expect(written).toBe(JSON.stringify(values));
    const ids = Int32Array.from(values.filter((v) => Math.abs(v) < 2 ** 31));
    const idText = new TextDecoder().decode(
      new JsonBytesWriter().raw('[').numbers(ids).raw(']').finish(),
    );
    expect(idText).toBe(JSON.stringify(Array.from(ids)));
  });

  it('writes an Int32Array of ids as JSON.stringify does, every digit count and sign, across its reserved blocks', () => {
    const edges = [0, -0, 1, -1, 9, 10, 99, 100, 2 ** 31 - 1, -(2 ** 31), -(2 ** 31 - 1)];
    for (let k = 1; k <= 9; k += 1) edges.push(10 ** k - 1, 10 ** k, 10 ** k + 1, -(10 ** k) + 1);
    const rng = seededRng(31);
    // 3,000 values: past two blocks of reserved room; each digit count drawn as often
    const values = Int32Array.from({ length: 3000 }, (_, i) =>
      i < edges.length
        ? edges[i]!
        : (Math.floor(rng() * 10 ** (1 + (i % 10))) % 2 ** 31) * (rng() < 0.2 ? -1 : 1),
    );
    for (const ids of [values, values.subarray(0, 1), values.subarray(0, 0), values.subarray(5)]) {
      // a writer whose buffer starts too small grows while writing
      const text = new TextDecoder().decode(
        new JsonBytesWriter(4).raw('[').int32s(ids).raw(']').finish(),
      );
      expect(text).toBe(JSON.stringify(Array.from(ids)));
    }
  });

  it('writes a datum as JSON.stringify writes the wire Datum of its values, float32 tensors as float32 text', () => {
    // repeats (copied bytes), zeros of both signs, integers, extremes, and seeded values
    const rng = seededRng(29);
    const n = 4096;
    const fixed = [-0.05, -1e-7, -12.3456789, 0, -0, 1, -1, 3.4e38, 1e-30, 1 / 3, 1 / 3, 2 ** 31];
    const logprobs = Float32Array.from({ length: n }, (_, i) =>
      i < fixed.length ? fixed[i]! : i % 7 === 0 ? 0 : -rng() * 20,
    );
    const datum = {
      modelInput: Array.from({ length: n }, (_, i) => (i * 7919) % 151_936),
      lossFnInputs: {
        target_tokens: Int32Array.from({ length: n }, (_, i) => (i * 104_729) % 151_936),
        logprobs,
        advantages: Float32Array.from({ length: n }, (_, i) => (i < 2048 ? 0.625 : -1.2e-3)),
      },
    };
    const tensor = (t: Int32Array | Float32Array, dtype: string) => ({
      data: Array.from(t),
      dtype,
      shape: [t.length],
    });
    const written = datumJson(datum);
    const stringified = JSON.stringify({
      model_input: { chunks: [{ type: 'encoded_text', tokens: datum.modelInput }] },
      loss_fn_inputs: {
        target_tokens: tensor(datum.lossFnInputs.target_tokens, 'int64'),
        logprobs: tensor(logprobs, 'float32'),
        advantages: tensor(datum.lossFnInputs.advantages, 'float32'),
      },
    });
    // every byte but the float32 tensors' numbers as JSON.stringify writes it (ids included)
    const FLOAT32_DATA = /"data":\[([^\]]*)\],"dtype":"float32"/g;
    const withoutFloat32s = (json: string) =>
      json.replace(FLOAT32_DATA, '"data":[],"dtype":"float32"');
    expect(withoutFloat32s(written)).toBe(withoutFloat32s(stringified));
    // the float32 numbers: each reads back as the same float32 (-0 as 0, as JSON.stringify
    // writes it), in fewer bytes than the double's digits
    const bitsOf = (values: ArrayLike<number>) =>
      Array.from(new Uint32Array(Float32Array.from(values, (v) => (v === 0 ? 0 : v)).buffer));
    const sent = [...written.matchAll(FLOAT32_DATA)].map(
      (m) => JSON.parse(`[${m[1]}]`) as number[],
    );
    expect(sent.map(bitsOf)).toEqual([bitsOf(logprobs), bitsOf(datum.lossFnInputs.advantages)]);
    expect(written.length).toBeLessThan(stringified.length - 4096 * 6);
    expect(written).toContain('"data":[0.625,0.625,');
    expect(written).toContain(',-0.0012,-0.0012,');
  });

  it('writes target tokens that are the model input one id on (views of one array) as their own ids', () => {
    const rng = seededRng(37);
    for (const length of [2, 3, 17, 4097]) {
      const tokens = Int32Array.from({ length }, (_, i) =>
        i === 0 ? -(2 ** 31) : Math.floor(rng() * 10 ** (1 + (i % 9))) * (i % 5 === 0 ? -1 : 1),
      );
      // shiftedDatum's views (worker executors/common/datum.ts), and copies of the same ids
      const views = {
        modelInput: tokens.subarray(0, -1),
        lossFnInputs: { target_tokens: tokens.subarray(1) },
      };
      const copies = {
        modelInput: tokens.slice(0, -1),
        lossFnInputs: { target_tokens: tokens.slice(1) },
      };
      const written = datumJson(views);
      expect(written).toBe(datumJson(copies));
      const wire = JSON.parse(written) as Wire.Datum;
      expect(wire.loss_fn_inputs['target_tokens']!.data).toEqual(Array.from(tokens.subarray(1)));
    }
    // the same offsets in another array are that array's ids
    const a = Int32Array.from([5, 6, 7, 8]);
    const b = Int32Array.from([50, 60, 70, 80]);
    const other = { modelInput: a.subarray(0, 3), lossFnInputs: { target_tokens: b.subarray(1) } };
    const wire = JSON.parse(datumJson(other)) as Wire.Datum;
    expect(wire.loss_fn_inputs['target_tokens']!.data).toEqual([60, 70, 80]);
  });

  it('appends a stretch already written again, and refuses one outside what is written', () => {
    const writer = new JsonBytesWriter(4).raw('[1,22,333');
    expect(writer.indexOf(0x2c, 1, writer.written)).toBe(2);
    writer.again(writer.indexOf(0x2c, 1, writer.written) + 1, writer.written).raw(']');
    expect(new TextDecoder().decode(writer.finish())).toBe('[1,22,33322,333]');
    expect(() => new JsonBytesWriter().raw('ab').again(1, 3)).toThrow(/outside the 2 bytes/);
  });

  it('writes runs of equal float32 values, of every length across the copies that double, as each value alone', () => {
    const kinds = [0, -0, 1, -0.625, -12.3456789, 1e-30, 3.4e38, Math.fround(1 / 3)];
    const values: number[] = [];
    // runs of 1 to 80 values (the copies pass SHORT_COPY and double several times), kinds in turn
    for (let length = 1; length <= 80; length += 1) {
      for (let k = 0; k < length; k += 1) values.push(kinds[length % kinds.length]!);
    }
    const tensor = Float32Array.from(values);
    const alone = (v: number) =>
      new TextDecoder().decode(new JsonBytesWriter(4).float32s(Float32Array.of(v)).finish());
    const written = new TextDecoder().decode(
      new JsonBytesWriter(4).raw('[').float32s(tensor).raw(']').finish(),
    );
    expect(written).toBe(`[${Array.from(tensor, alone).join(',')}]`);
    const bits = (a: ArrayLike<number>) =>
      Array.from(new Uint32Array(Float32Array.from(a, (v) => (v === 0 ? 0 : v)).buffer));
    expect(bits(JSON.parse(written) as number[])).toEqual(bits(tensor));
  });

  it('rejects an empty model input', () => {
    expect(() => checkWireDatum({ modelInput: [], lossFnInputs: {} }, 4)).toThrow(
      'data[4].modelInput is empty',
    );
  });
});
