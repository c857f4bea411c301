// JSON numbers of every shape the byte reader's loops treat differently, for the tests of
// http/json-bytes-reader.ts and the vLLM field extractor that reads logprobs with it.
import { seededRng } from '../src/http/timing.ts';
import { pythonFloatText } from './vllm/fixtures.ts';

/** Negative numbers mostly (logprobs), across the grammar: signs, zeros, exponents, ties, past
 * the double range, 16-19 digits, 2,000 float32 logprobs as vLLM writes them and 2,000
 * decimals of every shape the digit loops split (four digits at a time). Seeded: the same list
 * every run. */
export function numberTexts(): string[] {
  const texts = [
    '-0',
    '0',
    '-0.0',
    '1e0',
    '-1E-0',
    '-2.5e+3',
    '-0.1',
    '-0.30000000000000004',
    '-1.7976931348623157e308',
    '-1e309',
    '-5e-324',
    '-2e-324',
    '-9007199254740993',
    '-9007199254740992.5',
    '-123456789012345678901234567890',
    '-0.00000000000000000000001',
    '-1.0000000000000002',
    '-4.35',
    '-1e22',
    '-1e23',
    '-12345.678e-20',
    // 16-19 digits (vLLM's logprobs: Python's repr of float32 values), ties, past the table
    '-1.2345677614212036',
    '-4.539993096841499e-05',
    '-0.10000000149011612',
    '-9.999999747378752e-06',
    '-12345678901234567',
    '-1234567890123456.5',
    '-1.234567890123456789',
    '-1.2345678901234567e-45',
    '-1.2345678901234567e45',
    '-0.000000000000000000012345678901234567',
    '-1.2345678901234567890',
  ];
  // and 2,000 float32 logprobs as vLLM writes them
  const rng = seededRng(5);
  for (let i = 0; i < 2_000; i += 1) {
    texts.push(pythonFloatText(Math.fround(-Math.exp(rng() * 14 - 11))));
  }
  // and 2,000 decimals of every shape the digit loops split differently (four digits at a
  // time): integer parts of 0-4 digits, fractions of 1-24 digits after 0-9 leading zeros,
  // sometimes an exponent
  const digits = (n: number, first = '0123456789') =>
    Array.from(
      { length: n },
      (_, k) => (k === 0 ? first : '0123456789')[Math.floor(rng() * (k === 0 ? first.length : 10))],
    ).join('');
  for (let i = 0; i < 2_000; i += 1) {
    const whole = Math.floor(rng() * 5);
    const zeros = Math.floor(rng() * 10);
    const fraction = 1 + Math.floor(rng() * 24);
    const exponent = rng() < 0.2 ? `e-${Math.floor(rng() * 30)}` : '';
    texts.push(
      `-${whole === 0 ? '0' : digits(whole, '123456789')}.${'0'.repeat(zeros)}${digits(fraction)}${exponent}`,
    );
  }
  return texts;
}
