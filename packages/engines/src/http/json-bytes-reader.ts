// One-pass reading of JSON reply bytes, for readers that take a few fields straight from a
// reply's UTF-8 bytes and validate, without building, everything else (vLLM completions,
// vllm/fast-parse.ts; trainer forward results, tinker/forward-reader.ts). A reader extends
// JsonBytesReader and throws BAIL (through `readOrBail`) on anything it does not expect:
// malformed JSON, a value of another type, an escaped key; the caller then takes the generic
// path (JSON.parse and its own checks), which gives the result or the error it always gave.
import { Buffer } from 'node:buffer';
import { exactDecimal, HIGH_DIGITS } from './decimal.ts';
import { loadReply, type KernelReply } from './json-kernel.ts';

export const keyBytes = (key: string): Uint8Array => new TextEncoder().encode(key);

export const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
export const DIGIT_0 = 0x30;
export const DIGIT_9 = 0x39;
/** Nesting JSON.parse handles but recursion here should not risk. */
const MAX_DEPTH = 512;
/** Powers of ten that are exact doubles (Clinger's fast path). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);
const MAX_EXACT = 2 ** 53;
/** Exponents are clamped here while read; a clamped one takes the slow path (Number). */
const MAX_EXPONENT = 1_000_000;
/** What `number(true)` knows of the value it returns: the correctly rounded double, or one
 * within APPROXIMATE_ERROR of it, relatively (a mantissa of up to MAX_APPROXIMATE_DIGITS digits
 * is exact for its first 15, each later digit rounds it at most twice, 2^-53 each, and scaling
 * once more: under 2^-49 from the exact value, itself within 2^-53 of the rounded one). */
const EXACT = 0;
const APPROXIMATE = 1;
const MAX_APPROXIMATE_DIGITS = 19;
const APPROXIMATE_ERROR = 2 ** -48;

/** Thrown (one shared value, no stack) when the bytes are not what a reader reads. */
export const BAIL: unique symbol = Symbol('json-bytes-reader bail');

/** `read()`'s value, or undefined when it bailed: use the generic path. */
export function readOrBail<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (error === BAIL) return undefined;
    throw error;
  }
}

export class JsonBytesReader {
  protected pos = 0;
  /** End (exclusive) of the last string `plainString` read. */
  protected stringEnd = 0;
  /** EXACT or APPROXIMATE: what the last `number(true)` knew of its value. */
  private scanned = EXACT;
  /** The value `readNumber` read: a double returned from a call that is not inlined is boxed
   * (a heap number a value: most of what a reply's logprobs allocated), one read from a typed
   * array is not. */
  protected readonly numberRead = new Float64Array(1);

  private latin1View: Buffer | undefined;
  /** skipValue's open containers (their opening bytes). */
  private readonly openContainers = new Uint8Array(MAX_DEPTH + 2);

  /** The bytes copied into the JSON kernel (json-kernel.ts), whose loops then read the arrays
   * in their plain form; undefined: the JavaScript loops read everything (`useKernel` false, a
   * reply over KERNEL_MAX_BYTES). */
  protected readonly kernel: KernelReply | undefined;

  constructor(
    protected readonly bytes: Uint8Array,
    useKernel = true,
  ) {
    this.kernel = useKernel ? loadReply(bytes) : undefined;
  }

  /** The bytes as a Buffer (no copy), for the numbers Number must read. */
  private latin1(): Buffer {
    const { bytes } = this;
    this.latin1View ??= Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return this.latin1View;
  }

  /** Whitespace then the end of the bytes: nothing may follow the top-level value. */
  protected end(): void {
    this.skipWhitespace();
    if (this.pos !== this.bytes.length) throw BAIL;
  }

  /** `{ key: value, ... }`: `member` reads the value of a key it wants (returns true) or
   * leaves it to be skipped (returns false). The key's content starts at the offset `member`
   * gets and ends at `stringEnd`; an escaped key bails. The opening brace is at `pos`. */
  protected object(member: (key: number) => boolean): void {
    this.expect(OPEN_BRACE);
    this.skipWhitespace();
    if (this.bytes[this.pos] === CLOSE_BRACE) {
      this.pos += 1;
      return;
    }
    for (;;) {
      this.skipWhitespace();
      const key = this.plainString();
      this.skipWhitespace();
      this.expect(COLON);
      this.skipWhitespace();
      if (!member(key)) this.skipValue(1);
      this.skipWhitespace();
      const next = this.bytes[this.pos];
      this.pos += 1;
      if (next === CLOSE_BRACE) return;
      if (next !== COMMA) throw BAIL;
    }
  }

  /** Array elements after the opening bracket, each read by `element`. */
  protected elements(element: () => void): void {
    this.skipWhitespace();
    if (this.bytes[this.pos] === CLOSE_BRACKET) {
      this.pos += 1;
      return;
    }
    for (;;) {
      this.skipWhitespace();
      element();
      this.skipWhitespace();
      const next = this.bytes[this.pos];
      this.pos += 1;
      if (next === CLOSE_BRACKET) return;
      if (next !== COMMA) throw BAIL;
    }
  }

  /** A JSON number as a Float32Array stores JSON.parse's value (rounded to float32), left in
   * `numberRead[0]`. A value only known within APPROXIMATE's bound is taken when both ends of
   * that bound round to the same float32 — then so does JSON.parse's double, which lies between
   * them — as they do for the float32 values trainers write (17 significant digits, the double
   * fast path's limit being 16); otherwise the number is read exactly. */
  protected readFloat32(): void {
    const start = this.pos;
    this.readNumber(true);
    const value = this.numberRead[0]!;
    if (this.scanned === APPROXIMATE) {
      const low = Math.fround(value * (1 - APPROXIMATE_ERROR));
      this.numberRead[0] =
        low === Math.fround(value * (1 + APPROXIMATE_ERROR))
          ? low
          : Math.fround(this.numberAt(start));
      return;
    }
    this.numberRead[0] = Math.fround(value);
  }

  /** An array of numbers from its opening bracket at `pos`, as float32 (readFloat32 each), read
   * into a scratch array reused from array to array and copied out at its exact length. The
   * array as servers write it (no whitespace) is read by one loop without a call per element;
   * anything else element by element. */
  protected float32Array(): Float32Array {
    const read = this.arrayFromKernel((kernel, pos) => kernel.float32s(pos));
    if (read !== undefined) return read;
    this.expect(OPEN_BRACKET);
    let count = this.flatFloat32s();
    if (count < 0) {
      count = 0;
      this.elements(() => {
        this.readFloat32();
        if (count === floatScratch.length) floatScratch = doubled(floatScratch);
        floatScratch[count] = this.numberRead[0]!;
        count += 1;
      });
    }
    return floatScratch.slice(0, count);
  }

  /** The array at `pos` as the kernel reads it (`pos` then after it), or undefined: no kernel, or
   * not the kernel's plain form, for the JavaScript loops to read. */
  protected arrayFromKernel<T>(
    read: (kernel: KernelReply, pos: number) => T | undefined,
  ): T | undefined {
    const { kernel } = this;
    if (kernel === undefined) return undefined;
    const value = read(kernel, this.pos);
    if (value !== undefined) this.pos = kernel.end();
    return value;
  }

  /** float32Array's numbers written without whitespace: their count, `pos` after the array; -1
   * and `pos` unchanged for anything else. */
  private flatFloat32s(): number {
    const { bytes } = this;
    const start = this.pos;
    let count = 0;
    if (bytes[start] === CLOSE_BRACKET) {
      this.pos = start + 1;
      return 0;
    }
    for (;;) {
      const byte = bytes[this.pos] ?? 0;
      if (byte !== MINUS && (byte < DIGIT_0 || byte > DIGIT_9)) break;
      this.readFloat32();
      if (count === floatScratch.length) floatScratch = doubled(floatScratch);
      floatScratch[count] = this.numberRead[0]!;
      count += 1;
      const next = bytes[this.pos];
      this.pos += 1;
      if (next === COMMA) continue;
      if (next === CLOSE_BRACKET) return count;
      break;
    }
    this.pos = start;
    return -1;
  }

  /** The number from `start` to `pos`, read by Number (correctly rounded, as JSON.parse). */
  private numberAt(start: number): number {
    return Number(this.latin1().toString('latin1', start, this.pos));
  }

  /** A JSON number: JSON.parse's value (the correctly rounded double), or with `approximate`
   * a value within APPROXIMATE_ERROR of it, said by `scanned` = APPROXIMATE (float32 needs no
   * more). */
  protected number(approximate = false): number {
    this.readNumber(approximate);
    return this.numberRead[0]!;
  }

  /** `number`, its value left in `numberRead[0]` (readers of many numbers call this). One
   * function, the scan and both endings in it: the vLLM reader calls it for every token id and
   * logprob, and a call more per number cost that reader 10–20 %. */
  protected readNumber(approximate = false): void {
    const { bytes } = this;
    const start = this.pos;
    let pos = start;
    const negative = bytes[pos] === MINUS;
    if (negative) pos += 1;
    let mantissa = 0;
    let significant = 0;
    // exactDecimal's parts: the first HIGH_DIGITS significant digits, then the ones after them
    let high = 0;
    let tail = 0;
    let scale = 0;
    let clamped = false;
    let byte = bytes[pos] ?? 0;
    if (byte === DIGIT_0) {
      pos += 1;
    } else if (byte > DIGIT_0 && byte <= DIGIT_9) {
      do {
        mantissa = mantissa * 10 + (byte - DIGIT_0);
        significant += 1;
        if (significant <= HIGH_DIGITS) high = mantissa;
        else tail = tail * 10 + (byte - DIGIT_0);
        pos += 1;
        byte = bytes[pos] ?? 0;
      } while (byte >= DIGIT_0 && byte <= DIGIT_9);
    } else {
      throw BAIL;
    }
    if (bytes[pos] === DOT) {
      pos += 1;
      byte = bytes[pos] ?? 0;
      if (byte < DIGIT_0 || byte > DIGIT_9) throw BAIL;
      if (mantissa === 0) {
        // the fraction's leading zeros: not significant
        while (byte === DIGIT_0) {
          scale -= 1;
          pos += 1;
          byte = bytes[pos] ?? 0;
        }
      }
      // every digit from here is significant: four at a time while all stay among the high ones
      const view = viewOf(bytes);
      const last = bytes.length - 4;
      while (significant + 4 <= HIGH_DIGITS && pos <= last) {
        const x = view.getInt32(pos, true);
        if (!areDigits(x)) break;
        mantissa = mantissa * 10_000 + fourDigits(x);
        high = mantissa;
        significant += 4;
        scale -= 4;
        pos += 4;
      }
      byte = bytes[pos] ?? 0;
      while (byte >= DIGIT_0 && byte <= DIGIT_9) {
        significant += 1;
        mantissa = mantissa * 10 + (byte - DIGIT_0);
        if (significant <= HIGH_DIGITS) high = mantissa;
        else tail = tail * 10 + (byte - DIGIT_0);
        scale -= 1;
        pos += 1;
        byte = bytes[pos] ?? 0;
      }
    }
    byte = bytes[pos] ?? 0;
    if (byte === 0x65 || byte === 0x45) {
      pos += 1;
      byte = bytes[pos] ?? 0;
      const negativeExponent = byte === MINUS;
      if (byte === MINUS || byte === PLUS) pos += 1;
      byte = bytes[pos] ?? 0;
      if (byte < DIGIT_0 || byte > DIGIT_9) throw BAIL;
      let exponent = 0;
      do {
        exponent = exponent * 10 + (byte - DIGIT_0);
        if (exponent > MAX_EXPONENT) {
          exponent = MAX_EXPONENT;
          clamped = true;
        }
        pos += 1;
        byte = bytes[pos] ?? 0;
      } while (byte >= DIGIT_0 && byte <= DIGIT_9);
      scale += negativeExponent ? -exponent : exponent;
    }
    this.pos = pos;
    if (!clamped && scale >= -22 && scale <= 22 && significant <= MAX_APPROXIMATE_DIGITS) {
      // An exact mantissa times an exact power of ten is one correctly rounded operation
      // (Clinger's fast path); a longer mantissa was rounded on its way in.
      const exact = significant <= 16 && mantissa < MAX_EXACT;
      if (exact || approximate) {
        if (approximate) this.scanned = exact ? EXACT : APPROXIMATE;
        const magnitude =
          scale < 0 ? mantissa / (POW10[-scale] as number) : mantissa * (POW10[scale] as number);
        this.numberRead[0] = negative ? -magnitude : magnitude;
        return;
      }
    }
    this.scanned = EXACT;
    // up to 19 digits (vLLM's logprobs: 17) exactly without a string; the text when it can't tell
    const exact = clamped
      ? Number.NaN
      : exactDecimal(negative, high, tail, significant - HIGH_DIGITS, scale);
    this.numberRead[0] =
      exact === exact ? exact : Number(this.latin1().toString('latin1', start, pos));
  }

  /** A string without escapes (keys and values a reader compares): its content starts at the
   * returned offset and ends at `this.stringEnd`. */
  protected plainString(): number {
    const { bytes } = this;
    this.expect(QUOTE);
    const start = this.pos;
    let pos = start;
    for (;;) {
      const byte = bytes[pos] ?? 0;
      if (byte === QUOTE) break;
      if (byte === BACKSLASH || byte < 0x20) throw BAIL;
      pos += 1;
    }
    this.stringEnd = pos;
    this.pos = pos + 1;
    return start;
  }

  /** Whether the string `plainString` last read (from `start`) is `expected`. */
  protected keyIs(start: number, expected: Uint8Array): boolean {
    if (this.stringEnd - start !== expected.length) return false;
    for (let i = 0; i < expected.length; i += 1) {
      if (this.bytes[start + i] !== expected[i]) return false;
    }
    return true;
  }

  /** Checks one value of any type the way JSON.parse would, without building it: one loop over
   * the bytes, the open containers on a stack (bench/overhead: a call per skipped value — most of
   * a vLLM reply is per-token objects nobody reads — was a third of the reader's time). A value
   * nested deeper than MAX_DEPTH (counting from `depth`) bails. */
  protected skipValue(depth: number): void {
    const { bytes } = this;
    const stack = this.openContainers;
    let top = 0;
    let pos = this.pos;
    if (bytes[pos] === QUOTE && this.kernel !== undefined) {
      // a skipped member's string (vLLM's `text`: kilobytes a choice) in the kernel
      const end = this.kernel.skipString(pos);
      if (end >= 0) {
        this.pos = end;
        return;
      }
    }
    if (bytes[pos] === OPEN_BRACKET && depth + 2 <= MAX_DEPTH) {
      const skipped = this.kernel?.skipFlat(pos) ?? -1;
      const end = skipped >= 0 ? skipped : flatArrayEnd(bytes, pos);
      if (end >= 0) {
        this.pos = end;
        return;
      }
    }
    for (;;) {
      // a value starts at pos (whitespace before it already skipped)
      if (depth + top > MAX_DEPTH) throw BAIL;
      const byte = bytes[pos] ?? 0;
      if (byte === QUOTE) {
        pos = stringEnd(bytes, pos);
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
        const close = byte === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
        pos = whitespaceEnd(bytes, pos + 1);
        if (bytes[pos] === close) {
          pos += 1; // empty: a whole value
        } else {
          stack[top] = byte;
          top += 1;
          if (byte === OPEN_BRACE) pos = keyEnd(bytes, pos);
          continue;
        }
      } else if (byte === MINUS || (byte >= DIGIT_0 && byte <= DIGIT_9)) {
        pos = numberEnd(bytes, pos);
      } else {
        pos = literalEnd(bytes, pos);
      }
      // a value ended: close what it ends, or go on to the next element or member
      for (;;) {
        if (top === 0) {
          this.pos = pos;
          return;
        }
        pos = whitespaceEnd(bytes, pos);
        const next = bytes[pos];
        pos += 1;
        const open = stack[top - 1];
        if (next === COMMA) {
          pos = whitespaceEnd(bytes, pos);
          if (open === OPEN_BRACE) pos = keyEnd(bytes, pos);
          break;
        }
        if (next !== (open === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) throw BAIL;
        top -= 1;
      }
    }
  }

  /** Reads `word` when it is at `pos` (true), else leaves `pos` where it was. */
  protected literal(word: 'null' | 'true' | 'false'): boolean {
    for (let i = 0; i < word.length; i += 1) {
      if (this.bytes[this.pos + i] !== word.charCodeAt(i)) return false;
    }
    this.pos += word.length;
    return true;
  }

  protected expect(byte: number): void {
    if (this.bytes[this.pos] !== byte) throw BAIL;
    this.pos += 1;
  }

  /** whitespaceEnd's loop, written out: delegating to it cost the vLLM reader 10–25 % (measured
   * in one process against the loop; the readers call this around every value). */
  protected skipWhitespace(): void {
    const { bytes } = this;
    let byte = bytes[this.pos];
    while (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) {
      this.pos += 1;
      byte = bytes[this.pos];
    }
  }
}

/** A reader's scratch array at twice its length, its values kept (readers fill a scratch array
 * and copy out each array read at its exact length). */
export function doubled<T extends Int32Array | Float32Array | Float64Array>(scratch: T): T {
  const bigger = new (scratch.constructor as new (length: number) => T)(scratch.length * 2);
  bigger.set(scratch);
  return bigger;
}

/** float32Array's scratch, reused from array to array (reading is synchronous, and each thread
 * has its own module): growing a JS array by push allocated every reply's numbers twice on the
 * collected heap. */
let floatScratch = new Float32Array(4096);

/** Whitespace from `pos`; the offset after it. */
function whitespaceEnd(bytes: Uint8Array, pos: number): number {
  let at = pos;
  let byte = bytes[at];
  while (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) {
    at += 1;
    byte = bytes[at];
  }
  return at;
}

/** `toke` and `n_id` as getInt32 reads them (little-endian): the start of `token_id:`. */
const TOKE = 0x656b6f74;
const N_ID = 0x64695f6e;

/** 1 for a byte a string holds as it is: not a quote, a backslash or a control character. */
const PLAIN_STRING_BYTE = Uint8Array.from({ length: 256 }, (_, byte) =>
  byte >= 0x20 && byte !== QUOTE && byte !== BACKSLASH ? 1 : 0,
);

/** A string starting at `pos` (its opening quote): escapes checked, raw control characters
 * refused. UTF-8 continuation bytes are never a quote or a backslash, so bytes are scanned as
 * they are. The offset after its closing quote. */
function stringEnd(bytes: Uint8Array, pos: number): number {
  let at = pos + 1;
  const view = viewOf(bytes);
  const last = bytes.length - 4;
  if (at + 8 <= last && view.getInt32(at, true) === TOKE && view.getInt32(at + 4, true) === N_ID) {
    // vLLM's `token_id:<id>` (tokens, top_logprobs keys): its plain bytes passed at once
    at += 8;
    if (bytes[at] === COLON) at += 1;
    while (bytes[at]! >= DIGIT_0 && bytes[at]! <= DIGIT_9) at += 1;
    if (bytes[at] === QUOTE) return at + 1;
  }
  for (;;) {
    while (at <= last && arePlain(view.getInt32(at, true))) at += 4;
    while (PLAIN_STRING_BYTE[bytes[at]!] === 1) at += 1;
    const byte = bytes[at];
    if (byte === undefined || byte < 0x20) throw BAIL;
    at += 1;
    if (byte === QUOTE) return at;
    if (byte !== BACKSLASH) continue;
    const escaped = bytes[at];
    at += 1;
    if (escaped === 0x75) {
      for (let i = 0; i < 4; i += 1, at += 1) if (!isHex(bytes[at])) throw BAIL;
    } else if (!isSimpleEscape(escaped)) {
      throw BAIL;
    }
  }
}

/** An array of scalars (numbers, strings, literals) or of objects whose members are scalars,
 * written without whitespace — vLLM's per-token arrays (`text_offset`, `tokens`,
 * `top_logprobs`) as FastAPI writes them — from its opening bracket at `pos`: the offset after
 * it, each value checked as skipValue checks it, by a loop with no stack (bench/overhead: a third
 * less time than skipValue's for a `top_logprobs` array). -1 for anything else (whitespace, a
 * deeper value), which skipValue then reads its general way. */
function flatArrayEnd(bytes: Uint8Array, pos: number): number {
  let at = pos + 1;
  if (bytes[at] === CLOSE_BRACKET) return at + 1;
  for (;;) {
    if (bytes[at] === OPEN_BRACE) {
      at += 1;
      if (bytes[at] === CLOSE_BRACE) {
        at += 1;
      } else {
        for (;;) {
          if (bytes[at] !== QUOTE) return -1;
          at = stringEnd(bytes, at);
          if (bytes[at] !== COLON) return -1;
          at = scalarEnd(bytes, at + 1);
          if (at < 0) return -1;
          const next = bytes[at];
          at += 1;
          if (next === CLOSE_BRACE) break;
          if (next !== COMMA) return -1;
        }
      }
    } else {
      at = scalarEnd(bytes, at);
      if (at < 0) return -1;
    }
    const next = bytes[at];
    at += 1;
    if (next === COMMA) continue;
    return next === CLOSE_BRACKET ? at : -1;
  }
}

/** A string, number or literal at `pos`: the offset after it; -1 for anything else. */
function scalarEnd(bytes: Uint8Array, pos: number): number {
  const byte = bytes[pos] ?? 0;
  if (byte === QUOTE) return stringEnd(bytes, pos);
  if (byte === MINUS || (byte >= DIGIT_0 && byte <= DIGIT_9)) return numberEnd(bytes, pos);
  if (byte === 0x6e || byte === 0x74 || byte === 0x66) return literalEnd(bytes, pos);
  return -1;
}

/** A member's key at `pos`, then its colon: the offset of the member's value. */
function keyEnd(bytes: Uint8Array, pos: number): number {
  if (bytes[pos] !== QUOTE) throw BAIL;
  const at = whitespaceEnd(bytes, stringEnd(bytes, pos));
  if (bytes[at] !== COLON) throw BAIL;
  return whitespaceEnd(bytes, at + 1);
}

/** A number's grammar from `pos` (its sign or first digit); the offset after it. */
function numberEnd(bytes: Uint8Array, pos: number): number {
  let at = pos;
  if (bytes[at] === MINUS) at += 1;
  if (bytes[at] === DIGIT_0) at += 1;
  else at = skipDigits(bytes, at);
  if (bytes[at] === DOT) at = skipDigits(bytes, at + 1);
  if (bytes[at] === 0x65 || bytes[at] === 0x45) {
    at += 1;
    if (bytes[at] === MINUS || bytes[at] === PLUS) at += 1;
    at = skipDigits(bytes, at);
  }
  return at;
}

const NULL = keyBytes('null');
const TRUE = keyBytes('true');
const FALSE = keyBytes('false');

/** `null`, `true` or `false` at `pos`; the offset after it. */
function literalEnd(bytes: Uint8Array, pos: number): number {
  const first = bytes[pos];
  const word = first === 0x6e ? NULL : first === 0x74 ? TRUE : first === 0x66 ? FALSE : undefined;
  if (word === undefined) throw BAIL;
  for (let i = 1; i < word.length; i += 1) if (bytes[pos + i] !== word[i]) throw BAIL;
  return pos + word.length;
}

/** One or more digits from `pos`; the offset after them. Four bytes are tested at a time while
 * four are left (bench/overhead/vllm-reader.ts: the 16 fraction digits of every logprob vLLM
 * writes in `top_logprobs`, and `text_offset`'s numbers, are skipped here). */
function skipDigits(bytes: Uint8Array, pos: number): number {
  let byte = bytes[pos] ?? 0;
  if (byte < DIGIT_0 || byte > DIGIT_9) throw BAIL;
  let next = pos + 1;
  const view = viewOf(bytes);
  const last = bytes.length - 4;
  while (next <= last && areDigits(view.getInt32(next, true))) next += 4;
  byte = bytes[next] ?? 0;
  while (byte >= DIGIT_0 && byte <= DIGIT_9) {
    next += 1;
    byte = bytes[next] ?? 0;
  }
  return next;
}

/** Whether the four bytes of `x` (as getInt32 reads them) are all ASCII digits: each byte's high
 * nibble is 3, and adding 6 to each (no carry out of a byte whose high nibble is 3) keeps it 3. */
function areDigits(x: number): boolean {
  return (x & 0xf0f0f0f0) === 0x30303030 && ((x + 0x06060606) & 0xf0f0f0f0) === 0x30303030;
}

/** Whether none of the four bytes of `x` ends or escapes a string or is a control character:
 * no byte equal to a quote or a backslash (XOR makes such a byte zero), none below 0x20 — each
 * tested for all four at once by the borrow a byte below the subtrahend leaves in its top bit. */
function arePlain(x: number): boolean {
  const quote = x ^ 0x22222222;
  const backslash = x ^ 0x5c5c5c5c;
  const found =
    ((quote - 0x01010101) & ~quote) |
    ((backslash - 0x01010101) & ~backslash) |
    ((x - 0x20202020) & ~x);
  return (found & 0x80808080) === 0;
}

/** The value of four ASCII digits read by getInt32 (the first digit in the low byte): pairs
 * first (10·d0 + d1 and 10·d2 + d3 in bytes 0 and 2), then the pairs. */
function fourDigits(x: number): number {
  const d = x - 0x30303030;
  const pairs = (Math.imul(d, 10) + (d >>> 8)) & 0x00ff00ff;
  return (pairs & 0xff) * 100 + (pairs >>> 16);
}

/** A DataView of the bytes last read (one reply is read at a time per thread). */
let viewed: Uint8Array | undefined;
let view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
function viewOf(bytes: Uint8Array): DataView<ArrayBufferLike> {
  if (bytes !== viewed) {
    viewed = bytes;
    view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return view;
}

function isHex(byte: number | undefined): boolean {
  if (byte === undefined) return false;
  return (
    (byte >= DIGIT_0 && byte <= DIGIT_9) ||
    (byte >= 0x41 && byte <= 0x46) ||
    (byte >= 0x61 && byte <= 0x66)
  );
}

/** `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`. */
function isSimpleEscape(byte: number | undefined): boolean {
  return (
    byte === QUOTE ||
    byte === BACKSLASH ||
    byte === 0x2f ||
    byte === 0x62 ||
    byte === 0x66 ||
    byte === 0x6e ||
    byte === 0x72 ||
    byte === 0x74
  );
}
