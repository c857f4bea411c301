// The exact double of a JSON number of 16 to 19 significant digits, from the digits a reader
// has already scanned, without making a string of it. vLLM writes each logprob as Python's repr of a float32 value widened to a double
// (`-1.2345677614212036`, 17 digits), one past what the readers' exact fast path (Clinger's: a
// mantissa below 2^53 times an exact power of ten) can take; `Number` on the text costs ~140 ns
// a value here, more than reading the rest of the token.
//
// The value is M × 10^e with M < 10^19: M is held exactly as a double-double (two doubles whose
// sum is M), 10^e as the double-double nearest it (a table), and their product is formed with
// error-free transformations (Dekker's split, no fused multiply-add in JavaScript) to about 2^-100
// of the value. That product rounds to one double unless the value lies within that error of a
// point halfway between two doubles; both ends of the error interval are rounded, and when they
// round apart the caller takes the text path instead (`NaN` is returned). Inputs outside the
// table's exponents or past 19 digits are refused the same way; so are exact ties (a decimal
// halfway between two doubles, such as 2^53 + 1), whose rounding to even needs no slack at all.

/** 10^e for |e| <= this, as double-doubles. */
const MAX_EXPONENT = 40;
/** Significant digits in `high`: 15 stay below 2^53, exact in a double. */
export const HIGH_DIGITS = 15;
/** Digits after them: up to 4, so M < 10^19 is exact as a double-double. */
const MAX_TAIL_DIGITS = 4;
/** The product's relative error bound, generously: each step is good to ~2^-104. */
const ERROR = 2 ** -96;
/** Below this the result could be subnormal, where the error bound above does not hold. */
const MIN_NORMAL_SCALED = 2 ** -960;

const SPLITTER = 134_217_729; // 2^27 + 1

/** [hi, lo] of 10^e, e from -MAX_EXPONENT, built exactly with BigInt once. */
const POWERS: Float64Array = buildPowers();

function buildPowers(): Float64Array {
  const table = new Float64Array(2 * (2 * MAX_EXPONENT + 1));
  for (let e = -MAX_EXPONENT; e <= MAX_EXPONENT; e += 1) {
    const at = 2 * (e + MAX_EXPONENT);
    if (e >= 0) {
      const exact = 10n ** BigInt(e);
      const hi = Number(exact); // correctly rounded
      table[at] = hi;
      table[at + 1] = Number(exact - BigInt(hi));
      continue;
    }
    const hi = Number(`1e${e}`); // correctly rounded
    // hi = m / 2^s exactly; 10^e - hi = (2^s - m·10^-e) / (2^s·10^-e)
    let m = hi;
    let s = 0;
    while (!Number.isInteger(m)) {
      m *= 2;
      s += 1;
    }
    const ten = 10n ** BigInt(-e);
    const scale = 2n ** BigInt(s);
    table[at] = hi;
    table[at + 1] = Number(scale - BigInt(m) * ten) / Number(scale * ten);
  }
  return table;
}

/** The double JSON.parse gives a number whose significant digits are `high` (the first 15, an
 * integer) then `tail` (the `tailDigits` after them, 0 to 4), the last of them at 10^scale:
 * ±(high × 10^tailDigits + tail) × 10^scale. NaN when this cannot tell it exactly (the caller
 * then parses the number's text). */
export function exactDecimal(
  negative: boolean,
  high: number,
  tail: number,
  tailDigits: number,
  scale: number,
): number {
  if (high === 0) return negative ? -0 : 0;
  if (tailDigits > MAX_TAIL_DIGITS || scale < -MAX_EXPONENT || scale > MAX_EXPONENT) {
    return Number.NaN;
  }
  // M as a double-double (mh + ml): high × 10^tailDigits exactly, then + tail
  let mh = high;
  let ml = 0;
  if (tailDigits > 0) {
    const power = POWERS[2 * (tailDigits + MAX_EXPONENT)] as number; // exact, <= 10^4
    const product = high * power;
    const error = productError(high, power, product);
    const sum = product + tail;
    const sumError = tail - (sum - product); // |product| > |tail|: exact
    mh = sum + (error + sumError);
    ml = error + sumError - (mh - sum);
  }

  // (mh + ml) × (th + tl)
  const at = 2 * (scale + MAX_EXPONENT);
  const th = POWERS[at] as number;
  const tl = POWERS[at + 1] as number;
  const product = mh * th;
  const small = productError(mh, th, product) + (mh * tl + ml * th);
  const value = product + small;
  if (!(Math.abs(value) >= MIN_NORMAL_SCALED) || !Number.isFinite(value)) return Number.NaN;
  const rest = small - (value - product); // value + rest = product + small, to ~2^-106
  const slack = Math.abs(value) * ERROR;
  const below = value + (rest - slack);
  const above = value + (rest + slack);
  if (below !== above) return Number.NaN; // too close to a halfway point to tell
  return negative ? -below : below;
}

/** a·b − fl(a·b) exactly (Dekker's two-product; no overflow for the magnitudes here). */
function productError(a: number, b: number, product: number): number {
  let split = SPLITTER * a;
  const aHigh = split - (split - a);
  const aLow = a - aHigh;
  split = SPLITTER * b;
  const bHigh = split - (split - b);
  const bLow = b - bHigh;
  return aHigh * bHigh - product + aHigh * bLow + aLow * bHigh + aLow * bLow;
}
