import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { FLOAT32_TEXT_MAX_BYTES, writeFloat32 } from './float32-text.ts';
import { JsonBytesWriter } from './json-text.ts';

const bits = new Uint32Array(1);
const asFloat = new Float32Array(bits.buffer);
/** The float32 with these IEEE bits. */
const float32 = (pattern: number): number => {
  bits[0] = pattern;
  return asFloat[0] as number;
};
const bitsOf = (value: number): number => {
  asFloat[0] = value;
  return bits[0] as number;
};

const buffer = Buffer.alloc(64);
/** What writeFloat32 writes: JSON number grammar, plain or with a negative exponent. */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d*[1-9])?(e-[1-9]\d*)?$/;
/** writeFloat32's text for `value`, or null where it leaves the value to String(). */
const text = (value: number): string | null => {
  const end = writeFloat32(buffer, 0, value);
  return end < 0 ? null : buffer.toString('latin1', 0, end);
};

/** Writes and reads back each float32 of `values` writeFloat32 writes (not 0 nor integers: the
 * writer's integer path); returns how many it wrote and those not read back bit-equal as JSON
 * number text of at most FLOAT32_TEXT_MAX_BYTES. */
function roundTrip(values: Iterable<number>): { written: number; wrong: string[] } {
  let written = 0;
  const wrong: string[] = [];
  for (const value of values) {
    if (value === 0 || Number.isInteger(value)) continue;
    const end = writeFloat32(buffer, 0, value);
    if (end < 0) continue;
    written += 1;
    const decimal = buffer.toString('latin1', 0, end);
    if (
      Math.fround(Number(decimal)) !== value ||
      end > FLOAT32_TEXT_MAX_BYTES ||
      !JSON_NUMBER.test(decimal)
    ) {
      wrong.push(`${value} -> ${decimal}`);
    }
  }
  return { written, wrong };
}

function* aroundPowers(): Generator<number> {
  // every float32 within 2000 ulps of each power of ten, both signs (where the first digit's
  // exponent is found), and within 64 of each power of two (where the gap below halves)
  for (let k = -16; k <= 10; k += 1) {
    const at = bitsOf(Number(`1e${k}`));
    for (let d = -2000; d <= 2000; d += 1) {
      yield float32(at + d);
      yield -float32(at + d);
    }
  }
  for (let exponent = 1; exponent < 255; exponent += 1) {
    for (let d = -64; d <= 64; d += 1) yield float32(exponent * 2 ** 23 + d);
  }
}

function* strided(from: number, to: number, stride: number): Generator<number> {
  for (let b = from; b < to; b += stride) yield float32(b);
}

function* negated(values: Iterable<number>): Generator<number> {
  for (const value of values) yield -value;
}

function* randomPatterns(from: number, to: number, count: number, seed: number): Generator<number> {
  let state = seed;
  for (let i = 0; i < count; i += 1) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    yield float32(from + (state % (to - from)));
  }
}

describe('float32 text', () => {
  it('writes short decimals that read back as the same float32', () => {
    expect(text(Math.fround(-0.1))).toBe('-0.1');
    expect(text(Math.fround(0.625))).toBe('0.625');
    expect(text(Math.fround(1 / 3))).toBe('0.33333334');
    expect(text(Math.fround(-12.3456789))).toBe('-12.345679');
    expect(text(Math.fround(123456.7))).toBe('123456.7');
    expect(text(8388607.5)).toBe('8388607.5');
    // just below a power of ten: rounded up to it (one digit, one place up)
    expect(text(Math.fround(1e-5))).toBe('0.00001');
    expect(text(Math.fround(-2.5e-6))).toBe('-0.0000025');
    // below 1e-6 with an exponent, as String() writes it
    expect(text(Math.fround(1e-7))).toBe('1e-7');
    expect(text(Math.fround(-1.1920929e-7))).toBe('-1.1920929e-7');
    expect(text(Math.fround(3.0e-13))).toBe('3e-13');
  });

  it('leaves magnitudes outside [1e-14, 1e9), subnormals included, to String()', () => {
    expect(text(Math.fround(9e-15))).toBeNull();
    expect(text(float32(1))).toBeNull(); // the least subnormal
    expect(text(Math.fround(1.17549435e-38))).toBeNull(); // the least normal
    expect(text(Math.fround(3.4e38))).toBeNull();
    expect(text(Math.fround(-1e9))).toBeNull();
    expect(text(Math.fround(1e-13))).toBe('1e-13');
  });

  it('reads back bit-equal around every power of ten and two (249,000 values)', () => {
    const { written, wrong } = roundTrip(aroundPowers());
    expect(wrong).toEqual([]);
    expect(written).toBeGreaterThan(80_000);
  });

  it('reads back bit-equal over [-32, -1e-14] every 150th float32 and 1,000,000 random ones in range (3.9 million)', () => {
    const from = bitsOf(Math.fround(1e-14));
    const dense = roundTrip(negated(strided(from, bitsOf(32), 150)));
    expect(dense.wrong).toEqual([]);
    expect(dense.written).toBeGreaterThan(2_880_000); // of 2,885,269 (less integers)
    const random = roundTrip(randomPatterns(from, bitsOf(2 ** 23), 1_000_000, 29));
    expect(random.wrong).toEqual([]);
    expect(random.written).toBeGreaterThan(985_000); // less integers (≥ 2^22) and 1e-14's ulp
  });
});

describe('JsonBytesWriter.float32s', () => {
  const json = (values: Float32Array): string =>
    new TextDecoder().decode(new JsonBytesWriter().raw('[').float32s(values).raw(']').finish());

  it('writes valid JSON whose every value reads back as the same float32', () => {
    const values = Float32Array.from([
      -0.05,
      -1e-7,
      -12.3456789,
      0,
      -0,
      1,
      -1,
      3.4e38,
      -3.4e38,
      1e-30,
      1 / 3,
      2 ** 31,
      1e-45,
      1.17549435e-38,
      5e-39,
      -(2 ** 24) - 2,
      16777215.5,
      1e9 + 64,
      0.1,
      123.456,
    ]);
    const text = json(values);
    const back = JSON.parse(text) as number[];
    expect(back).toHaveLength(values.length);
    // bit-equal, but for -0: written as JSON.stringify writes it (0), it reads back as +0
    const bitsOrZero = (v: number): number => bitsOf(v === 0 ? 0 : v);
    back.forEach((value, i) => expect(bitsOrZero(Math.fround(value))).toBe(bitsOrZero(values[i]!)));
    // -0 as JSON.stringify writes it, integers digit by digit, magnitudes below 1e-14 (subnormals
    // included) and from 1e9 as String() writes them, the rest as float32 text
    expect(text).toBe(
      '[-0.05,-1e-7,-12.345679,0,0,1,-1,3.3999999521443642e+38,-3.3999999521443642e+38,' +
        '1.0000000031710769e-30,0.33333334,2147483648,1.401298464324817e-45,' +
        '1.1754943508222875e-38,4.999999675228202e-39,-16777218,16777216,1000000064,0.1,123.456]',
    );
  });

  it('copies a repeated value and writes shorter text than String()', () => {
    const values = Float32Array.from([0.625, 0.625, 0.625, -1.2e-3, -1.2e-3, 0, 0]);
    expect(json(values)).toBe('[0.625,0.625,0.625,-0.0012,-0.0012,0,0]');
    const logprobs = Float32Array.from({ length: 1000 }, (_, i) => -Math.abs(Math.sin(i)) * 20);
    const text = json(logprobs);
    const plain = `[${Array.from(logprobs, String).join(',')}]`;
    expect(text.length).toBeLessThan(0.7 * plain.length);
    const back = (JSON.parse(text) as number[]).map(Math.fround);
    expect(back.every((v, i) => v === logprobs[i])).toBe(true);
  });

  it('grows its buffer across long tensors', () => {
    const values = Float32Array.from({ length: 20_000 }, (_, i) => -(i + 0.5) / 7);
    const back = JSON.parse(json(values)) as number[];
    expect(back.map(Math.fround)).toEqual(Array.from(values));
  });
});
