// Request bodies already serialised as JSON (sendJson sends them as they are), and a writer of
// JSON bytes for bodies whose bulk is typed arrays (Tinker datums). `numbers` writes each number
// as JSON.stringify writes it: int32s two digits a division (float32-text.ts `writeFixed`), a
// value equal to the one before by copying its bytes, other numbers through String(); `int32s`
// writes an Int32Array (ids) the same, without a test per value. `float32s`, for tensors the
// trainer holds as float32, does as `numbers` but writes a non-integer of magnitude 1e-14 to 1e9
// in at most 9 significant digits that read back as the same float32 (float32-text.ts) instead
// of String()'s up to 17 digits of the double: 2.6–3.5× faster and 59 % of the bytes for
// logprobs (bench/overhead/float32-text.ts), where String() was most of the writer's cost.
// bench/overhead: copying every tensor into a JS array for JSON.stringify was the orchestrator's
// largest allocation, and TypedArray.prototype.join formats integers several times slower than
// this.
import { Buffer } from 'node:buffer';
import type { BytePool } from './byte-pool.ts';
import { FLOAT32_TEXT_MAX_BYTES, writeFixed, writeFloat32Of } from './float32-text.ts';
import { loadFloats } from './json-kernel.ts';

/** A JSON body as text or UTF-8 bytes. */
export class JsonText {
  /** @param release gives the body's buffer back for reuse (JsonBytesWriter.release): call it
   * only once a 2xx reply has come, which the server sends after reading the whole body, so no
   * byte of it is still waiting to be written to the socket. */
  constructor(
    readonly body: string | Uint8Array,
    readonly release: () => void = () => undefined,
  ) {}
}

const COMMA = 0x2c;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
/** Copies shorter than this are made byte by byte: copyWithin's call costs more. */
const SHORT_COPY = 32;
/** Integers below this are written digit by digit (exactly as String() writes them). */
const DIGIT_LIMIT = 2 ** 53;

/** int32s: values whose room is reserved at once, and the most bytes one takes with its
 * comma ("-2147483648,"). */
const INT32_BLOCK = 1024;
const INT32_MAX_BYTES = 12;
const INT32_MIN = -(2 ** 31);
const INT32_MIN_DIGITS = Uint8Array.from('2147483648', (c) => c.charCodeAt(0));
/** Decimal digits of a non-negative integer below 10^10. */
function digitCount(value: number): number {
  if (value < 100_000) {
    return value < 10 ? 1 : value < 100 ? 2 : value < 1000 ? 3 : value < 10_000 ? 4 : 5;
  }
  return value < 1_000_000
    ? 6
    : value < 10_000_000
      ? 7
      : value < 100_000_000
        ? 8
        : value < 1_000_000_000
          ? 9
          : 10;
}

export class JsonBytesWriter {
  private bytes: Buffer;
  private length = 0;
  private readonly digits = new Uint8Array(20);

  /** @param expectedBytes the body's expected size (it grows past it if need be).
   * @param pool where its buffers come from and go back to (byte-pool.ts); none: allocated. */
  constructor(
    expectedBytes = 1 << 16,
    private readonly pool?: BytePool,
  ) {
    this.bytes = pool ? pool.take(expectedBytes) : Buffer.allocUnsafe(expectedBytes);
  }

  /** JSON text as it is (UTF-8). */
  raw(text: string): this {
    this.reserve(text.length * 3);
    this.length += this.bytes.write(text, this.length, 'utf8');
    return this;
  }

  /** `values` as JSON numbers separated by commas (no brackets). Every value must be finite
   * (JSON has no NaN or Infinity). */
  numbers(values: ArrayLike<number>): this {
    let previous = Number.NaN;
    let previousStart = 0;
    let previousEnd = 0;
    for (let i = 0; i < values.length; i += 1) {
      const value = values[i] as number;
      if (i > 0) this.comma();
      if (value === previous) {
        // the same bytes again (advantages repeat along a sequence, masks and zeros run)
        previousStart = this.repeat(previousStart, previousEnd);
        previousEnd = this.length;
        continue;
      }
      previousStart = this.length;
      if (Number.isInteger(value) && Math.abs(value) < DIGIT_LIMIT) this.integer(value);
      else this.rawAscii(String(value));
      previous = value;
      previousEnd = this.length;
    }
    return this;
  }

  /** `values` (ids) as JSON numbers separated by commas (no brackets), the bytes `numbers`
   * writes for them, with int32 arithmetic and room reserved a block of values at a time
   * (bench/overhead: `numbers` on a step's 4.2 M ids was 5 % of the main thread). */
  int32s(values: Int32Array): this {
    const count = values.length;
    for (let block = 0; block < count; block += INT32_BLOCK) {
      const end = Math.min(count, block + INT32_BLOCK);
      this.reserve(INT32_MAX_BYTES * (end - block));
      const { bytes } = this;
      let at = this.length;
      for (let i = block; i < end; i += 1) {
        if (i > 0) bytes[at++] = COMMA;
        let rest = values[i]! | 0;
        if (rest < 0) {
          bytes[at++] = MINUS;
          if (rest === INT32_MIN) {
            // its magnitude is not an int32
            for (let k = 0; k < INT32_MIN_DIGITS.length; k += 1) bytes[at++] = INT32_MIN_DIGITS[k]!;
            continue;
          }
          rest = -rest | 0;
        }
        const digits = digitCount(rest);
        writeFixed(bytes, at, rest, digits);
        at += digits;
      }
      this.length = at;
    }
    return this;
  }

  /** `values` as JSON numbers separated by commas (no brackets), each as text that reads back
   * as the same float32 (float32-text.ts) — not the double's 17 digits String() writes: for a
   * tensor the trainer holds as float32 (dtype `float32`). Integers (0 for -0, as JSON.stringify
   * writes it) digit by digit, values outside writeFloat32's range through String(). A run of
   * equal values (advantages along a sequence, the loss weights, zeros on prompt positions) is
   * written once and then copied, doubling (repeatRun). Every value must be finite. */
  float32s(values: Float32Array): this {
    const count = values.length;
    // stretches of values writeFloat32Of writes (not integers, not runs) in the JSON kernel
    const kernel = count > 0 ? loadFloats(values) : undefined;
    let i = 0;
    while (i < count) {
      if (kernel !== undefined) {
        const stop = kernel.write(i);
        if (stop > i) {
          if (i > 0) this.comma();
          this.append(kernel.text());
          i = stop;
          if (i === count) break;
        }
      }
      const value = values[i]!;
      let end = i + 1;
      while (end < count && values[end] === value) end += 1;
      if (i > 0) this.comma();
      const start = this.length;
      if (Number.isInteger(value) && Math.abs(value) < DIGIT_LIMIT) this.integer(value);
      else {
        this.reserve(FLOAT32_TEXT_MAX_BYTES);
        const written = writeFloat32Of(this.bytes, this.length, values, i);
        if (written >= 0) this.length = written;
        else this.rawAscii(String(value));
      }
      if (end - i > 1) this.repeatRun(start, end - i - 1);
      i = end;
    }
    return this;
  }

  /** How many bytes are written so far (an offset for `again` and `indexOf`). */
  get written(): number {
    return this.length;
  }

  /** The bytes [start, end) already written, appended again (a long stretch: one copy). */
  again(start: number, end: number): this {
    if (!(start >= 0 && start <= end && end <= this.length)) {
      throw new RangeError(`again(${start}, ${end}): outside the ${this.length} bytes written`);
    }
    this.reserve(end - start);
    this.bytes.copyWithin(this.length, start, end);
    this.length += end - start;
    return this;
  }

  /** The offset of the first `byte` in the bytes [from, to) written, or -1. */
  indexOf(byte: number, from: number, to: number): number {
    return this.bytes.subarray(0, to).indexOf(byte, from);
  }

  /** The bytes written (a view of the writer's buffer: the writer is not used afterwards). */
  finish(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  /** Gives the buffer back to the pool: nothing may read what `finish` returned afterwards. */
  release(): void {
    this.pool?.give(this.bytes);
  }

  /** Bytes copied to the end (a text the JSON kernel wrote). */
  private append(text: Uint8Array): void {
    this.reserve(text.length);
    this.bytes.set(text, this.length);
    this.length += text.length;
  }

  private comma(): void {
    this.reserve(1);
    this.bytes[this.length] = COMMA;
    this.length += 1;
  }

  /** Copies the bytes [start, end) to the end; returns where the copy starts. A number's few
   * bytes are copied one by one: `copyWithin`'s call costs more than the copy. */
  private repeat(start: number, end: number): number {
    const size = end - start;
    this.reserve(size);
    const { bytes } = this;
    const copy = this.length;
    for (let i = 0; i < size; i += 1) bytes[copy + i] = bytes[start + i]!;
    this.length += size;
    return copy;
  }

  /** `times` copies of a comma and the number written from `start` to the end, appended: one
   * copy byte by byte, then the copies made so far copied at once, doubling (a byte loop per
   * value wrote the weights and advantages of 512 × 4,136 positions in 40–110 ms, this in 7–39
   * ms: docs/performance.md "Orchestrator overhead: step buffers reused, runs copied whole"). */
  private repeatRun(start: number, times: number): void {
    const unit = this.length - start + 1;
    const total = unit * times;
    this.reserve(total);
    const { bytes } = this;
    const first = this.length;
    bytes[first] = COMMA;
    for (let k = 1; k < unit; k += 1) bytes[first + k] = bytes[start + k - 1]!;
    let filled = unit;
    while (filled < total) {
      const size = Math.min(filled, total - filled);
      if (size < SHORT_COPY) {
        for (let k = 0; k < size; k += 1) bytes[first + filled + k] = bytes[first + k]!;
      } else {
        bytes.copyWithin(first + filled, first, first + size);
      }
      filled += size;
    }
    this.length = first + total;
  }

  private integer(value: number): void {
    if (value >= 0 && value <= 0x7fffffff) {
      this.smallInteger(value | 0);
      return;
    }
    this.reserve(18);
    let rest = value;
    if (rest < 0) {
      this.bytes[this.length] = MINUS;
      this.length += 1;
      rest = -rest;
    }
    let count = 0;
    do {
      const next = Math.floor(rest / 10);
      this.digits[count] = DIGIT_0 + (rest - next * 10);
      count += 1;
      rest = next;
    } while (rest > 0);
    while (count > 0) {
      count -= 1;
      this.bytes[this.length] = this.digits[count] as number;
      this.length += 1;
    }
  }

  /** A non-negative int32 (masks, ids in a number[]): its digits counted, then written two a
   * division. */
  private smallInteger(value: number): void {
    const count = digitCount(value);
    this.reserve(count);
    writeFixed(this.bytes, this.length, value, count);
    this.length += count;
  }

  private rawAscii(text: string): void {
    this.reserve(text.length);
    for (let i = 0; i < text.length; i += 1) {
      this.bytes[this.length + i] = text.charCodeAt(i);
    }
    this.length += text.length;
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.bytes.length) return;
    const size = Math.max(this.bytes.length * 2, this.length + extra);
    const grown = this.pool ? this.pool.take(size) : Buffer.allocUnsafe(size);
    this.bytes.copy(grown, 0, 0, this.length);
    this.pool?.give(this.bytes);
    this.bytes = grown;
  }
}
