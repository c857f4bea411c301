// The JSON kernel (wasm/json-kernel.wat) against the JavaScript loops it stands in for: the same
// arrays read by a JsonBytesReader with the kernel and without it give the same result, value for
// value and bit for bit, or the same refusal; the kernel accepts the plain arrays vLLM and the
// trainers write (so the comparison is not vacuous) and leaves everything else to JavaScript.
// The arrays are seeded random per-token arrays, logprob arrays and id arrays, each also mutated
// (a byte deleted, inserted or replaced, the end cut off). The vLLM and trainer readers' own tests
// (vllm/fast-parse.test.ts, tinker/forward-reader.test.ts) run through the kernel too: every
// reader uses it.
import { describe, expect, it } from 'vitest';
import { compareGenerated } from '@anneal/wasm-tools';
import { JSON_KERNEL } from '../../wasm/compile.ts';
import { numberTexts } from '../../test/http-number-texts.ts';
import { JsonBytesReader, readOrBail } from './json-bytes-reader.ts';
import { JSON_KERNEL_BASE64, JSON_KERNEL_BYTES } from './json-kernel-bytes.ts';
import { writeFloat32 } from './float32-text.ts';
import { KERNEL_MAX_BYTES, loadFloats, loadReply } from './json-kernel.ts';
import { seededRng, type Rng } from './timing.ts';

const encoder = new TextEncoder();

/** What a reader makes of one array at offset 0: the offset after it and the values it read, or
 * 'refused' (BAIL). */
class ArrayReader extends JsonBytesReader {
  skipped(): number {
    this.skipValue(0);
    return this.pos;
  }

  floats(): { end: number; values: number[] } {
    const values = Array.from(this.float32Array());
    return { end: this.pos, values };
  }
}

const read = <T>(text: Uint8Array, useKernel: boolean, what: (r: ArrayReader) => T) =>
  readOrBail(() => what(new ArrayReader(text, useKernel))) ?? 'refused';

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;

/** skipValue at offset 0 with the kernel and without it: the same end or the same refusal; then
 * whether the kernel's own `skip` accepted the text, and if so with JavaScript's end. */
function skipsAlike(
  text: string,
  skip: (bytes: Uint8Array) => number,
): { accepted: boolean; refused: boolean } {
  const bytes = encoder.encode(text);
  const alone = read(bytes, false, (r) => r.skipped());
  expect(
    read(bytes, true, (r) => r.skipped()),
    text,
  ).toEqual(alone);
  const end = skip(bytes);
  if (end >= 0) expect(alone, text).toBe(end);
  return { accepted: end >= 0, refused: alone === 'refused' };
}

const NUMBERS = numberTexts();
const STRINGS = [
  '"token_id:0"',
  '"token_id:151935"',
  '""',
  '"é日本"',
  '"a\\"b"',
  '"\\u00e9"',
  '"\\n"',
  '"ab\u0001"',
  '"\\x"',
  '"12345678"',
  '"a]b}c,d"',
];
const LITERALS = ['null', 'true', 'false', 'nul', 'tru'];

function scalar(rng: Rng): string {
  const r = rng();
  if (r < 0.5) return pick(rng, NUMBERS);
  if (r < 0.85) return pick(rng, STRINGS);
  return pick(rng, LITERALS);
}

/** One of vLLM's per-token array shapes (top_logprobs' objects, tokens' strings, text_offset's
 * numbers), sometimes mixed, nested or with whitespace. */
function perTokenArray(rng: Rng): string {
  const n = Math.floor(rng() * 12);
  const shape = rng();
  const element = (): string => {
    if (shape < 0.35) {
      const members = Math.floor(rng() * 3);
      return `{${Array.from({ length: members }, () => `${pick(rng, STRINGS)}:${scalar(rng)}`).join(',')}}`;
    }
    if (shape < 0.8) return scalar(rng);
    return rng() < 0.5 ? `[${scalar(rng)}]` : ` ${scalar(rng)} `;
  };
  return `[${Array.from({ length: n }, element).join(',')}]`;
}

const numberArray = (rng: Rng): string =>
  `[${Array.from({ length: Math.floor(rng() * 16) }, () => pick(rng, NUMBERS)).join(',')}]`;

const idArray = (rng: Rng): string =>
  `[${Array.from({ length: Math.floor(rng() * 16) }, () => {
    const r = rng();
    if (r < 0.8) return String(Math.floor(rng() * 151_936));
    return pick(rng, ['0', '2147483647', '2147483648', '01', '-1', '1.5', '1e3', '99999999999']);
  }).join(',')}]`;

const MUTATION_BYTES = [
  '"',
  '\\',
  ',',
  ']',
  '[',
  '}',
  '{',
  ':',
  ' ',
  '0',
  '9',
  'e',
  '-',
  '.',
  '\u0001',
];

/** The text as it is, or with one byte deleted, inserted or replaced, or its end cut off. */
function mutated(rng: Rng, text: string): string {
  const r = rng();
  const at = Math.floor(rng() * text.length);
  if (r < 0.4) return text;
  if (r < 0.55) return text.slice(0, at) + text.slice(at + 1);
  if (r < 0.7) return text.slice(0, at) + pick(rng, MUTATION_BYTES) + text.slice(at);
  if (r < 0.85) return text.slice(0, at) + pick(rng, MUTATION_BYTES) + text.slice(at + 1);
  return text.slice(0, at);
}

describe('src/http/json-kernel-bytes.ts (generated from wasm/json-kernel.wat)', () => {
  it('matches a fresh compile of the .wat byte for byte (else: npm run gen:wasm -w @anneal/engines)', async () => {
    const drift = await compareGenerated(JSON_KERNEL, JSON_KERNEL_BASE64);
    expect(drift).toEqual({ committedBytes: JSON_KERNEL_BYTES, same: true });
  });
});

describe('the JSON kernel against the JavaScript loops', () => {
  it('skips 6,000 seeded per-token arrays (and mutations) exactly as skipValue does', () => {
    const rng = seededRng(29);
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 6_000; i += 1) {
      // what the kernel accepts, JavaScript accepts with the same end
      const alike = skipsAlike(mutated(rng, perTokenArray(rng)), (bytes) =>
        loadReply(bytes)!.skipFlat(0),
      );
      if (alike.accepted) accepted += 1;
      if (alike.refused) refused += 1;
    }
    expect(accepted).toBeGreaterThan(500);
    expect(refused).toBeGreaterThan(500);
  });

  it('skips 3,000 seeded strings (and mutations) exactly as skipValue does', () => {
    const rng = seededRng(43);
    const pieces = [
      'a',
      'token_id:7',
      'é',
      '日本',
      ' ',
      '\\"',
      '\\n',
      '\\u00e9',
      '\u0001',
      '\\x',
      '12345678',
    ];
    let accepted = 0;
    let escapedAccepted = 0;
    for (let i = 0; i < 3_000; i += 1) {
      const content = Array.from({ length: Math.floor(rng() * 40) }, () =>
        rng() < 0.9 ? pick(rng, pieces.slice(0, 5)) : pick(rng, pieces),
      ).join('');
      const text = mutated(rng, `"${content}"`);
      const alike = skipsAlike(text, (bytes) => loadReply(bytes)!.skipString(0));
      if (alike.accepted) accepted += 1;
      // escapes are the kernel's too (a reply's `text` has them on every line)
      if (alike.accepted && text.slice(1, -1).includes('\\')) escapedAccepted += 1;
    }
    expect(accepted).toBeGreaterThan(1_000);
    expect(escapedAccepted).toBeGreaterThan(300);
  });

  it('reads 4,000 seeded arrays of numbers (and mutations) as float32 exactly as float32Array does', () => {
    const rng = seededRng(31);
    let accepted = 0;
    for (let i = 0; i < 4_000; i += 1) {
      const text = mutated(rng, numberArray(rng));
      const bytes = encoder.encode(text);
      const alone = read(bytes, false, (r) => r.floats());
      const withKernel = read(bytes, true, (r) => r.floats());
      expect(withKernel, text).toEqual(alone);
      if (alone !== 'refused') {
        // bit for bit, -0 included (toEqual treats -0 and 0 alike)
        const signs = (values: number[]) => values.map((v) => Object.is(v, -0));
        expect(signs((withKernel as typeof alone).values)).toEqual(signs(alone.values));
      }
      if (text.startsWith('[') && loadReply(bytes)!.float32s(0) !== undefined) accepted += 1;
    }
    expect(accepted).toBeGreaterThan(400);
  });

  it('reads float32 logprobs as JSON.parse and Math.fround do, across the number grammar', () => {
    const bytes = encoder.encode(`[${NUMBERS.join(',')}]`);
    const plain = NUMBERS.filter((t) => /^-?\d+(\.\d+)?(e[-+]?\d+)?$/i.test(t)).slice(0, 2_000);
    const expected = plain.map((t) => Math.fround(JSON.parse(t) as number));
    // the whole list holds numbers past the kernel's digits or exponent: left to JavaScript
    expect(loadReply(bytes)!.float32s(0)).toBeUndefined();
    // vLLM's logprobs (17 digits, `e-05`) and the rest of the plain ones
    const read = plain.map((t) => loadReply(encoder.encode(`[${t}]`))!.float32s(0)?.[0]);
    const differ = plain.filter(
      (t, i) => read[i] !== undefined && !Object.is(read[i], expected[i]),
    );
    expect(differ).toEqual([]);
    expect(read.filter((v) => v !== undefined).length).toBeGreaterThan(1_500);
  });

  it('reads id arrays as flatIds does: digits, no leading zero, at most INT32_MAX', () => {
    const rng = seededRng(37);
    let accepted = 0;
    for (let i = 0; i < 3_000; i += 1) {
      const text = mutated(rng, idArray(rng));
      const reply = loadReply(encoder.encode(text))!;
      const ids = text.startsWith('[') ? reply.int32s(0) : undefined;
      if (ids === undefined) continue;
      accepted += 1;
      const parsed = JSON.parse(text.slice(0, reply.end())) as number[];
      expect(Array.from(ids), text).toEqual(parsed);
      expect(text.slice(0, reply.end()).match(/\b0\d/), text).toBeNull();
      expect(parsed.every((id) => Number.isInteger(id) && id >= 0 && id <= 0x7fffffff)).toBe(true);
    }
    expect(accepted).toBeGreaterThan(500);
  });
});

describe('the JSON kernel writing float32 text', () => {
  const scratch = Buffer.alloc(32);
  /** writeFloat32's text for `value` (float32-text.ts, JavaScript), or null where it refuses. */
  const javascript = (value: number): string | null => {
    const end = writeFloat32(scratch, 0, value);
    return end < 0 ? null : scratch.toString('latin1', 0, end);
  };

  it('writes 300,000 float32 values byte for byte as writeFloat32Of, and stops where float32s writes otherwise', () => {
    const rng = seededRng(41);
    const bits = new Uint32Array(200_000).map(() => Math.floor(rng() * 2 ** 32));
    const values = [
      ...new Float32Array(bits.buffer),
      // logprobs, and values a step either side of every power of ten the writer switches at
      ...Array.from({ length: 100_000 }, () => -Math.exp(rng() * 40 - 30)),
      ...Array.from({ length: 25 }, (_, k) => 10 ** (k - 16)).flatMap((p) => [
        p,
        p * (1 + 2 ** -23),
        p * (1 - 2 ** -24),
        -p,
      ]),
      0.625,
      0.625,
      3,
    ];
    const floats = Float32Array.from(values);
    const kernel = loadFloats(floats)!;
    const wrong: string[] = [];
    let written = 0;
    let i = 0;
    while (i < floats.length) {
      const stop = kernel.write(i);
      const texts = stop > i ? Buffer.from(kernel.text()).toString('latin1').split(',') : [];
      if (texts.length !== stop - i)
        wrong.push(`${stop - i} values from ${i}, ${texts.length} texts`);
      for (let j = i; j < stop; j += 1) {
        const value = floats[j]!;
        if (Number.isInteger(value) || texts[j - i] !== javascript(value)) {
          wrong.push(`${value}: ${texts[j - i]} against ${javascript(value)}`);
        }
      }
      written += stop - i;
      if (stop < floats.length) {
        // what it left to float32s: an integer, a repeat, or what writeFloat32Of refuses
        const value = floats[stop]!;
        const repeat = stop > i && value === floats[stop - 1];
        if (!(Number.isInteger(value) || repeat || javascript(value) === null)) {
          wrong.push(`stopped at ${value}`);
        }
      }
      i = stop + 1;
    }
    expect(wrong).toEqual([]);
    expect(written).toBeGreaterThan(150_000);
  });
});

describe('the JSON kernel memory', () => {
  it('grows for a larger reply and reads a smaller one after it', () => {
    const big = `[${Array.from({ length: 100_000 }, (_, i) => `-0.${String(i + 1).padStart(6, '0')}1234567891`).join(',')}]`;
    const values = loadReply(encoder.encode(big))!.float32s(0);
    expect(values).toHaveLength(100_000);
    expect(values?.[99_999]).toBe(Math.fround(-0.1000001234567891));
    const small = loadReply(encoder.encode('[-0.5,-1.5]'))!;
    expect(Array.from(small.float32s(0)!)).toEqual([-0.5, -1.5]);
    expect(small.end()).toBe(11);
  });

  it('refuses to read a reply after another was copied in over it', () => {
    const first = loadReply(encoder.encode('[1,2]'))!;
    loadReply(encoder.encode('[3]'));
    expect(() => first.int32s(0)).toThrow(/after another one was copied in over it/);
  });

  it('leaves a reply over KERNEL_MAX_BYTES to the JavaScript loops', () => {
    expect(loadReply(new Uint8Array(KERNEL_MAX_BYTES + 1))).toBeUndefined();
  });
});
