// A float32 value as short decimal text that reads back as the same float32. A float32 tensor
// (the wire's dtype `float32`) is held by the trainer as float32, so any decimal that rounds to
// the same float32 is as exact as the 17 digits String() writes for the value as a double
// (Math.fround(-0.1) → "-0.10000000149011612"), and formatting it with integer arithmetic costs
// a fraction of String().
//
// Why 9 significant digits always read back (they are never checked): a float32 a that is not
// subnormal is at least 2^-24·a from either neighbour (its ulp is 2^-24·a to 2^-23·a, and the
// gap below a power of two is half an ulp), so at least 2^-25·a ≈ 3·10^-8·a from either
// midpoint. The 9-digit decimal d is within 0.5·10^(e-8) ≤ 5·10^-9·a of a (10^e ≤ a < 10^(e+1),
// e = the exponent of the first digit), plus one rounding of the scaled value (≤ 2^-53 relative:
// 10^k is exact for k ≤ 22, so a·10^k is one rounded operation). A reader rounds d to the
// nearest double (2^-53·d more) and then to float32 (JSON.parse + Math.fround; Python float →
// numpy/torch float32): both steps stay far inside a's half-gap, so no double rounding can pick
// the neighbour.
//
// Fewer digits are then tried, each accepted only if Math.fround of the nearest double to the
// shorter decimal is a: that double is one correctly rounded operation on exact operands (an
// integer below 2^53 times or divided by an exact 10^k), which is what a correctly rounding
// parser computes. The result is short but not always the shortest.

/** Exact powers of ten (10^k is a double exactly for k ≤ 22). */
const POW10 = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
  1e18, 1e19, 1e20, 1e21, 1e22,
];
/** 10^k for k = MIN_EXPONENT .. MAX_EXPONENT + 1 (the nearest doubles), at k - MIN_EXPONENT. */
const POWERS = [
  1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1,
  1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
];
const LOG10_2 = Math.log10(2);
/** Decimal exponents of the first digit written here: below, String() (its exponent form). */
const MIN_EXPONENT = -14;
/** Above: String() (its digits of an integer, or its exponent form from 1e21). */
const MAX_EXPONENT = 8;
/** Below this first-digit exponent the text takes an exponent, as String() writes it. */
const PLAIN_MIN_EXPONENT = -6;

/** Bytes writeFloat32 writes at most: "-0.00000123456789" (17). */
export const FLOAT32_TEXT_MAX_BYTES = 17;

const MINUS = 0x2d;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const LOWER_E = 0x65;

/** a · 10^k, rounded once (|k| ≤ 22). */
const scaled = (a: number, k: number): number =>
  k >= 0 ? a * (POW10[k] as number) : a / (POW10[-k] as number);

/**
 * Writes `value` (a float32 held as a double, finite, not 0) at `at` as JSON number text of at
 * most 9 significant digits that Math.fround(Number(text)) reads back as `value`, and returns
 * where the text ends; or returns -1, writing nothing, when |value| is outside [1e-14, 1e9)
 * (subnormals included), for the caller to write String(value). `bytes` must have
 * FLOAT32_TEXT_MAX_BYTES from `at`.
 */
export function writeFloat32(bytes: Uint8Array, at: number, value: number): number {
  single[0] = value;
  return writeFloat32Of(bytes, at, single, 0);
}

const single = new Float32Array(1);
/** single's bits: the binary exponent of a float32 without Math.log10. */
const singleBits = new Int32Array(single.buffer);

/** writeFloat32 of `values[index]`, read here: a double passed to a call that is not inlined is
 * boxed (a heap number each value), one read from a typed array is not. */
export function writeFloat32Of(
  bytes: Uint8Array,
  at: number,
  values: Float32Array,
  index: number,
): number {
  const value = values[index]!;
  const a = value < 0 ? -value : value;
  // e: the decimal exponent of the first digit. 2^b ≤ a < 2^(b+1) puts it at floor(b·log10 2)
  // or one more, told apart by the power of ten between them.
  single[0] = a;
  const b = ((singleBits[0]! >>> 23) & 0xff) - 127;
  let e = Math.floor(b * LOG10_2);
  if (e < MIN_EXPONENT - 1 || e > MAX_EXPONENT) return -1;
  if (a >= (POWERS[e + 1 - MIN_EXPONENT] as number)) e += 1;
  // n: the 9-digit significand, 10^8 ≤ n < 10^9 (it may round up to 10^9: then one place up)
  let n: number;
  for (;;) {
    if (!(e >= MIN_EXPONENT && e <= MAX_EXPONENT)) return -1;
    n = Math.round(scaled(a, 8 - e));
    if (n >= 1e9) e += 1;
    else if (n < 1e8) e -= 1;
    else break;
  }
  let count = 9;
  while (n % 10 === 0) {
    n /= 10;
    count -= 1;
  }
  // shorter while the shorter decimal still reads back as a (checked as a parser reads it)
  while (count > 1) {
    const k = count - 2 - e;
    const shorter = Math.round(scaled(a, k));
    if (Math.fround(scaled(shorter, -k)) !== a) break;
    if (shorter === POW10[count - 1]) {
      // rounded up to the next power of ten: one digit, one place up
      n = 1;
      count = 1;
      e += 1;
      break;
    }
    n = shorter;
    count -= 1;
  }
  let i = at;
  if (value < 0) {
    bytes[i] = MINUS;
    i += 1;
  }
  if (e >= 0) {
    // digits before the point, then the rest after it (or zeros to the point: an integer)
    if (count <= e + 1) {
      i = writeDigits(bytes, i, n, count, 0);
      for (let z = count; z <= e; z += 1) bytes[i++] = DIGIT_0;
      return i;
    }
    return writeDigits(bytes, i, n, count, count - e - 1);
  }
  if (e >= PLAIN_MIN_EXPONENT) {
    bytes[i] = DIGIT_0;
    bytes[i + 1] = DOT;
    i += 2;
    for (let z = -1; z > e; z -= 1) bytes[i++] = DIGIT_0;
    return writeDigits(bytes, i, n, count, 0);
  }
  i = writeDigits(bytes, i, n, count, count - 1);
  bytes[i] = LOWER_E;
  bytes[i + 1] = MINUS;
  return writeDigits(bytes, i + 2, -e, -e >= 10 ? 2 : 1, 0);
}

/** "00" to "99": the two digits of n at 2n and 2n + 1 (digits are written two a division). */
const DIGIT_PAIRS = Uint8Array.from({ length: 200 }, (_, i) =>
  i % 2 === 0 ? DIGIT_0 + Math.floor(i / 20) : DIGIT_0 + (((i - 1) / 2) % 10),
);

/** The `count` digits of `n` (below 10^9) at `at`, a point before the last `fraction` of them;
 * the end. */
function writeDigits(
  bytes: Uint8Array,
  at: number,
  n: number,
  count: number,
  fraction: number,
): number {
  if (fraction === 0) {
    writeFixed(bytes, at, n, count);
    return at + count;
  }
  const unit = POW10[fraction] as number;
  const whole = Math.floor(n / unit);
  const point = at + count - fraction;
  writeFixed(bytes, at, whole, count - fraction);
  bytes[point] = DOT;
  writeFixed(bytes, point + 1, n - whole * unit, fraction);
  return at + count + 1;
}

/** Exactly `count` digits of `n` (a non-negative int32; zeros first when it has fewer) at
 * `at`, two a division. */
export function writeFixed(bytes: Uint8Array, at: number, n: number, count: number): void {
  let i = at + count;
  let rest = n | 0;
  while (i - at >= 2) {
    const next = (rest / 100) | 0;
    const pair = (rest - next * 100) << 1;
    bytes[--i] = DIGIT_PAIRS[pair + 1]!;
    bytes[--i] = DIGIT_PAIRS[pair]!;
    rest = next;
  }
  if (i > at) bytes[at] = DIGIT_0 + rest;
}
