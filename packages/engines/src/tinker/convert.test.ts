import { describe, expect, it } from 'vitest';
import { fromWireForward, toWireDatum, toWireLossConfig } from './convert.ts';
import { combineMetrics, gradNormOf, parseMetricKey, parseMetrics } from './metrics.ts';

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
    expect(() => toWireDatum(datum([0, Number.NaN, 0]), 2)).toThrow(
      'data[2].lossFnInputs.advantages[1] is NaN: a trainer takes finite numbers only',
    );
    expect(() => toWireDatum(datum([0, 0, -Infinity]), 0)).toThrow(
      'data[0].lossFnInputs.advantages[2] is -Infinity',
    );
    expect(toWireDatum(datum([0, 0.5, 0]), 0).loss_fn_inputs['advantages']!.data).toEqual([
      0, 0.5, 0,
    ]);
  });

  it('rejects an empty model input', () => {
    expect(() => toWireDatum({ modelInput: [], lossFnInputs: {} }, 4)).toThrow(
      'data[4].modelInput is empty',
    );
  });
});
