// shiftedDatum: model input without the last token, every loss input shifted by one and held as
// float32, whatever array the per-token values come in; typed arrays of the right type as views.
import { describe, expect, it } from 'vitest';
import { shiftedDatum } from './datum.ts';

describe('shiftedDatum', () => {
  const tokens = Int32Array.from([7, 8, 9, 10]);
  const values = [0, 1 / 3, -0.1, 2 ** -30];

  it('rounds each value to float32 the same from a plain array, a Float64Array or a Float32Array', () => {
    const expected = Float32Array.from(values.slice(1));
    for (const perToken of [values, Float64Array.from(values), Float32Array.from(values)]) {
      const datum = shiftedDatum(tokens, { advantages: perToken });
      expect(Array.from(datum.lossFnInputs['advantages']!)).toEqual(Array.from(expected));
    }
    const datum = shiftedDatum(tokens, { advantages: Float64Array.from(values) });
    expect(Array.from(datum.modelInput)).toEqual([7, 8, 9]);
    expect(Array.from(datum.lossFnInputs['target_tokens']!)).toEqual([8, 9, 10]);
  });

  it('takes Int32Array ids and Float32Array values as views, copies other arrays', () => {
    const logprobs = Float32Array.from(values);
    const doubles = Float64Array.from(values);
    const datum = shiftedDatum(tokens, { logprobs, doubles });
    const shifted = datum.lossFnInputs['logprobs'] as Float32Array;
    expect(shifted.buffer).toBe(logprobs.buffer);
    expect(shifted.byteOffset).toBe(Float32Array.BYTES_PER_ELEMENT);
    expect((datum.lossFnInputs['target_tokens'] as Int32Array).buffer).toBe(tokens.buffer);
    expect((datum.modelInput as Int32Array).buffer).toBe(tokens.buffer);
    expect((datum.lossFnInputs['doubles'] as Float32Array).buffer).not.toBe(doubles.buffer);
  });

  it('refuses values that do not match the tokens', () => {
    expect(() => shiftedDatum(tokens, { weights: new Float64Array(3) })).toThrow(
      'weights: 3 values for 4 tokens',
    );
  });
});
