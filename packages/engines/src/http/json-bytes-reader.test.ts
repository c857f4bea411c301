// JsonBytesReader's numbers against JSON.parse, bit for bit: `number()` is JSON.parse's double
// (the digit loops, four digits at a time, and exactDecimal for 16-19 digits behind them), and
// `readFloat32()` is that double rounded once to float32, also where it stops at an
// approximate value (the float32 logprobs trainers and vLLM write).
import { describe, expect, it } from 'vitest';
import { numberTexts } from '../../test/http-number-texts.ts';
import { seededRng } from './timing.ts';
import {
  CLOSE_BRACKET,
  COMMA,
  JsonBytesReader,
  OPEN_BRACKET,
  readOrBail,
} from './json-bytes-reader.ts';

class NumbersReader extends JsonBytesReader {
  /** A flat array of numbers, each read by `read`. */
  all(read: 'exact' | 'float32'): number[] {
    const values: number[] = [];
    this.expect(OPEN_BRACKET);
    for (;;) {
      if (read === 'exact') {
        values.push(this.number());
      } else {
        this.readFloat32();
        values.push(this.numberRead[0]!);
      }
      const next = this.bytes[this.pos];
      this.pos += 1;
      if (next === CLOSE_BRACKET) return values;
      if (next !== COMMA) throw new Error(`unexpected byte ${next} at ${this.pos - 1}`);
    }
  }
}

describe('JsonBytesReader numbers', () => {
  const texts = numberTexts();
  const bytes = new TextEncoder().encode(`[${texts.join(',')}]`);
  const parsed = texts.map((t) => JSON.parse(t) as number);

  it('number() is the double JSON.parse gives', () => {
    const read = readOrBail(() => new NumbersReader(bytes).all('exact'));
    const differ = texts.filter((_, i) => !Object.is(read?.[i], parsed[i]));
    expect(read).toHaveLength(texts.length);
    expect(differ).toEqual([]);
  });

  it('readFloat32() rounds numbers at and around the midpoints between float32 values as JSON.parse and fround do', () => {
    // its approximate reading is taken only when both ends of its bound round to one float32:
    // here the bound straddles the rounding point (or ties on it), and the exact read decides
    const rng = seededRng(11);
    const f32 = new Float32Array(1);
    const u32 = new Uint32Array(f32.buffer);
    const near: string[] = [];
    for (let i = 0; i < 3_000; i += 1) {
      f32[0] = -Math.exp(rng() * 30 - 20);
      const f = f32[0];
      u32[0] = u32[0]! + 1;
      const midpoint = (f + f32[0]) / 2; // exact in a double
      for (const digits of [12, 13, 17, 20, 25]) near.push(midpoint.toPrecision(digits));
      near.push(midpoint.toExponential(16), (midpoint * (1 + 2 ** -40)).toPrecision(17));
    }
    const text = new TextEncoder().encode(`[${near.join(',')}]`);
    const read = readOrBail(() => new NumbersReader(text).all('float32'));
    const differ = near.filter(
      (t, i) => !Object.is(read?.[i], Math.fround(JSON.parse(t) as number)),
    );
    expect(read).toHaveLength(near.length);
    expect(differ).toEqual([]);
  });

  it('readFloat32() is that double rounded once to float32', () => {
    const read = readOrBail(() => new NumbersReader(bytes).all('float32'));
    const differ = texts.filter((_, i) => !Object.is(read?.[i], Math.fround(parsed[i]!)));
    expect(read).toHaveLength(texts.length);
    expect(differ).toEqual([]);
  });
});
