// exactDecimal against JSON.parse's own reading (Number) of the same text, given the text's digits
// split as the JSON reader splits them: numbers written as vLLM writes logprobs (Python's repr of
// float32 values), random doubles at full length, random 17-19 digit decimals over the exponents
// it covers, and decimals built next to the points halfway between two doubles, where it must
// either answer exactly or decline (NaN). The reader's own splitting is tested through it
// (vllm/fast-parse.test.ts, numbers across the grammar).
import { describe, expect, it } from 'vitest';
import { exactDecimal, HIGH_DIGITS } from './decimal.ts';
import { seededRng } from './timing.ts';
import { pythonFloatText } from '../../test/vllm/fixtures.ts';

/** exactDecimal's answer for `text`, its digits split as JsonBytesReader.readNumber splits them
 * (significant digits from the first non-zero one, trailing zeros included). */
function read(text: string): { value: number; declined: boolean } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text);
  if (match === null) throw new Error(`not a decimal: ${text}`);
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  const high = Number(digits.slice(0, HIGH_DIGITS) || '0');
  const tail = Number(digits.slice(HIGH_DIGITS) || '0');
  const scale = Number(exponent) - fraction.length;
  const value = exactDecimal(sign === '-', high, tail, digits.length - HIGH_DIGITS, scale);
  return { value, declined: Number.isNaN(value) };
}

/** The exact value of a decimal text, num / den. */
function rational(text: string): { num: bigint; den: bigint } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text);
  if (match === null) throw new Error(`not a decimal: ${text}`);
  const [, sign, whole, fraction = '', exponentText = '0'] = match;
  const exponent = Number(exponentText) - fraction.length;
  let num = BigInt(`${sign}${whole}${fraction}`);
  let den = 1n;
  if (exponent >= 0) num *= 10n ** BigInt(exponent);
  else den = 10n ** BigInt(-exponent);
  return { num, den };
}

/** The exact value of a finite double, num / den. */
function ofDouble(value: number): { num: bigint; den: bigint } {
  let num = value;
  let den = 1n;
  while (!Number.isInteger(num)) {
    num *= 2;
    den *= 2n;
  }
  return { num: BigInt(num), den };
}

/** The double next to `value` (up or down) by its bits; value > 0. */
function adjacent(value: number, step: 1n | -1n): number {
  const words = new BigInt64Array(new Float64Array([value]).buffer);
  words[0] = (words[0] as bigint) + step;
  return new Float64Array(words.buffer)[0] as number;
}

/** Whether the text lies exactly halfway between two doubles (a tie, which exactDecimal may
 * decline: ties to even need the exact value). */
function isTie(text: string): boolean {
  const exact = rational(text.replace(/^-/, ''));
  const near = Math.abs(Number(text));
  return [adjacent(near, 1n), adjacent(near, -1n)].some((other) => {
    const a = ofDouble(near);
    const b = ofDouble(other);
    // (a + b) / 2 == exact  <=>  (a.num·b.den + b.num·a.den)·exact.den == 2·a.den·b.den·exact.num
    return (a.num * b.den + b.num * a.den) * exact.den === 2n * a.den * b.den * exact.num;
  });
}

/** Checks every answer against Number(text); returns the texts declined. */
function agrees(texts: readonly string[]): string[] {
  const declined: string[] = [];
  for (const text of texts) {
    const got = read(text);
    if (got.declined) {
      declined.push(text);
      continue;
    }
    if (!Object.is(got.value, Number(text))) {
      throw new Error(`${text}: ${got.value} where JSON.parse reads ${Number(text)}`);
    }
  }
  return declined;
}

function digitsOf(rng: () => number, count: number): string {
  let text = String(1 + Math.floor(rng() * 9));
  for (let i = 1; i < count; i += 1) text += String(Math.floor(rng() * 10));
  return text;
}

describe('exactDecimal', () => {
  it('reads float32 logprobs as vLLM writes them, exactly and without declining', () => {
    const rng = seededRng(11);
    const texts = Array.from({ length: 100_000 }, () =>
      pythonFloatText(Math.fround(-Math.exp(rng() * 14 - 11))),
    );
    expect(texts.some((text) => text.includes('e-0'))).toBe(true);
    expect(agrees(texts)).toEqual([]);
  });

  it('reads random doubles at full length exactly, declining only ties', () => {
    const rng = seededRng(12);
    const texts = Array.from({ length: 100_000 }, () => {
      const value = (rng() - 0.5) * 10 ** Math.floor(rng() * 40 - 20);
      return rng() < 0.5 ? String(value) : value.toExponential();
    });
    const declined = agrees(texts);
    expect(declined.filter((text) => !isTie(text))).toEqual([]);
    expect(declined.length).toBeLessThan(texts.length / 100);
  });

  it('reads 17-19 digit decimals over its exponents exactly, declining only ties', () => {
    const rng = seededRng(13);
    const texts = Array.from({ length: 100_000 }, () => {
      const digits = digitsOf(rng, 17 + Math.floor(rng() * 3));
      const point = Math.floor(rng() * digits.length);
      const exponent = Math.floor(rng() * 40 - 20); // the value's scale stays within ±40
      const fraction = digits.slice(point + 1);
      const sign = rng() < 0.5 ? '-' : '';
      return `${sign}${digits.slice(0, point + 1)}${fraction && `.${fraction}`}e${exponent}`;
    });
    const declined = agrees(texts);
    expect(declined.filter((text) => !isTie(text))).toEqual([]);
    expect(declined.length).toBeLessThan(texts.length / 20);
  });

  it('answers exactly or declines next to halfway points', () => {
    const rng = seededRng(14);
    const texts: string[] = [];
    for (let i = 0; i < 20_000; i += 1) {
      // the midpoint of a double and the next one up, exactly, as a decimal (BigInt), then its
      // first 17-19 digits and the decimals one unit in the last place either side
      const value = Math.fround(rng() * 2 ** Math.floor(rng() * 60 - 30)) + 2 ** -40;
      const bits = new BigUint64Array(new Float64Array([value]).buffer)[0] as bigint;
      const exponentBits = Number((bits >> 52n) & 0x7ffn);
      const mantissa = (bits & ((1n << 52n) - 1n)) | (1n << 52n);
      const twice = 2n * mantissa + 1n; // the midpoint is twice × 2^(e − 1075 − 1)
      const power = exponentBits - 1076;
      const scaled = power >= 0 ? twice << BigInt(power) : twice * 5n ** BigInt(-power);
      const shift = power >= 0 ? 0 : -power; // midpoint = scaled × 10^-shift
      const full = scaled.toString();
      const keep = 17 + Math.floor(rng() * 3);
      if (full.length <= keep) continue;
      const head = BigInt(full.slice(0, keep));
      const exponent = full.length - keep - shift;
      for (const near of [head - 1n, head, head + 1n]) texts.push(`${near}e${exponent}`);
    }
    expect(texts.length).toBeGreaterThan(30_000);
    const declined = agrees(texts);
    expect(declined.length).toBeLessThan(texts.length / 2); // it answers most of them
  });

  it('declines what it does not hold: over 19 digits, exponents past its table', () => {
    expect(read('1.23456789012345678901').declined).toBe(true);
    expect(read('1.2345678901234567e-80').declined).toBe(true);
    expect(read('1.2345678901234567e300').declined).toBe(true);
    expect(read('-0.000').value).toBe(-0);
    expect(read('12345678901234567').declined).toBe(true); // halfway between two doubles
    expect(read('123456789012345678').value).toBe(123456789012345680);
  });
});
