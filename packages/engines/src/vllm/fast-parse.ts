// `/v1/completions` reply bytes -> SampledSequence[] without materialising the reply
// (docs/engines.md "vLLM"). One pass over the UTF-8 bytes reads only what parse.ts reads (the
// choices' `index`, `token_ids`, `logprobs.token_logprobs`, `logprobs.tokens` when `token_ids`
// is absent, `finish_reason`) and validates, without building, every other value (the per-token
// `top_logprobs` objects, `tokens`, `text_offset`, `text`, ...). Anything it does not expect —
// malformed JSON, a field of another type, a null logprob, an escaped key, a duplicate field,
// an unknown finish reason — returns undefined, and the caller takes the generic path
// (JSON.parse + parse.ts), which gives the result or the error it always gave.
import { Buffer } from 'node:buffer';
import type { FinishReason, SampledSequence } from '../types.ts';

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  length: 'length',
  abort: 'abort',
  repetition: 'length',
};

const keyBytes = (key: string): Uint8Array => new TextEncoder().encode(key);
const KEY_CHOICES = keyBytes('choices');
const KEY_INDEX = keyBytes('index');
const KEY_TOKEN_IDS = keyBytes('token_ids');
const KEY_LOGPROBS = keyBytes('logprobs');
const KEY_FINISH_REASON = keyBytes('finish_reason');
const KEY_TOKEN_LOGPROBS = keyBytes('token_logprobs');
const KEY_TOKENS = keyBytes('tokens');
const TOKEN_ID_PREFIX = keyBytes('token_id:');

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** Nesting JSON.parse handles but recursion here should not risk. */
const MAX_DEPTH = 512;
/** Powers of ten that are exact doubles (Clinger's fast path). */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);
const MAX_EXACT = 2 ** 53;
/** Exponents are clamped here while read; a clamped one takes the slow path (Number). */
const MAX_EXPONENT = 1_000_000;

/** Thrown (one shared value, no stack) when the reply is not what the fast path reads. */
const BAIL: unique symbol = Symbol('fast-parse bail');

interface ChoiceFields {
  index: number;
  tokenIds: number[] | null | undefined;
  tokenLogprobs: number[] | undefined;
  /** Offset of `logprobs.tokens`'s value, read only when `token_ids` is absent. */
  tokenStrings: number;
  finishReason: FinishReason | undefined;
  sawLogprobs: boolean;
}

/** The reply's choices as parseCompletion would return them, or undefined: use the generic path. */
export function extractCompletion(
  bytes: Uint8Array,
  expectedChoices: number,
): SampledSequence[] | undefined {
  try {
    return new Extractor(bytes).completion(expectedChoices);
  } catch (error) {
    if (error === BAIL) return undefined;
    throw error;
  }
}

class Extractor {
  private pos = 0;
  /** End (exclusive) of the last string `plainString` read. */
  private stringEnd = 0;

  private latin1View: Buffer | undefined;

  constructor(private readonly bytes: Uint8Array) {}

  /** The bytes as a Buffer (no copy), for the numbers Number must read. */
  private latin1(): Buffer {
    const { bytes } = this;
    this.latin1View ??= Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return this.latin1View;
  }

  completion(expectedChoices: number): SampledSequence[] {
    const found: Array<{ index: number; sequence: SampledSequence }> = [];
    let sawChoices = false;
    this.skipWhitespace();
    this.object((key) => {
      if (!this.keyIs(key, KEY_CHOICES)) return false;
      if (sawChoices) throw BAIL;
      sawChoices = true;
      this.expect(OPEN_BRACKET);
      this.elements(() => found.push(this.choice(found.length)));
      return true;
    });
    this.skipWhitespace();
    if (this.pos !== this.bytes.length || !sawChoices || found.length !== expectedChoices) {
      throw BAIL;
    }
    found.sort((a, b) => a.index - b.index);
    return found.map((entry) => entry.sequence);
  }

  private choice(position: number): { index: number; sequence: SampledSequence } {
    const fields: ChoiceFields = {
      index: position,
      tokenIds: undefined,
      tokenLogprobs: undefined,
      tokenStrings: -1,
      finishReason: undefined,
      sawLogprobs: false,
    };
    let sawIndex = false;
    let sawTokenIds = false;
    let sawFinish = false;
    this.object((key) => {
      if (this.keyIs(key, KEY_INDEX)) {
        if (sawIndex) throw BAIL;
        sawIndex = true;
        fields.index = this.number();
      } else if (this.keyIs(key, KEY_TOKEN_IDS)) {
        if (sawTokenIds) throw BAIL;
        sawTokenIds = true;
        fields.tokenIds = this.literal('null') ? null : this.integerArray();
      } else if (this.keyIs(key, KEY_LOGPROBS)) {
        if (fields.sawLogprobs) throw BAIL;
        fields.sawLogprobs = true;
        this.logprobs(fields);
      } else if (this.keyIs(key, KEY_FINISH_REASON)) {
        if (sawFinish) throw BAIL;
        sawFinish = true;
        fields.finishReason = this.finishReason();
      } else {
        return false;
      }
      return true;
    });
    const { tokenLogprobs, finishReason } = fields;
    if (tokenLogprobs === undefined || finishReason === undefined) throw BAIL;
    const tokens = Array.isArray(fields.tokenIds) ? fields.tokenIds : this.tokenStrings(fields);
    if (tokens.length !== tokenLogprobs.length) throw BAIL;
    return { index: fields.index, sequence: { tokens, logprobs: tokenLogprobs, finishReason } };
  }

  private logprobs(fields: ChoiceFields): void {
    this.object((key) => {
      if (this.keyIs(key, KEY_TOKEN_LOGPROBS)) {
        if (fields.tokenLogprobs !== undefined) throw BAIL;
        fields.tokenLogprobs = this.numberArray();
      } else if (this.keyIs(key, KEY_TOKENS)) {
        if (fields.tokenStrings >= 0) throw BAIL;
        fields.tokenStrings = this.pos;
        this.skipValue(0);
      } else {
        return false;
      }
      return true;
    });
  }

  /** Older servers: ids from the `"token_id:<id>"` strings of `logprobs.tokens`. */
  private tokenStrings(fields: ChoiceFields): number[] {
    if (fields.tokenStrings < 0) throw BAIL;
    const resume = this.pos;
    this.pos = fields.tokenStrings;
    const ids: number[] = [];
    this.expect(OPEN_BRACKET);
    this.elements(() => ids.push(this.tokenIdString()));
    this.pos = resume;
    return ids;
  }

  private tokenIdString(): number {
    const { bytes } = this;
    this.expect(QUOTE);
    for (const byte of TOKEN_ID_PREFIX) {
      if (bytes[this.pos] !== byte) throw BAIL;
      this.pos += 1;
    }
    const start = this.pos;
    let id = 0;
    for (;;) {
      const byte = bytes[this.pos] ?? 0;
      if (byte === QUOTE) break;
      if (byte < DIGIT_0 || byte > DIGIT_9) throw BAIL;
      id = id * 10 + (byte - DIGIT_0);
      this.pos += 1;
    }
    const digits = this.pos - start;
    if (digits === 0 || digits > 15) throw BAIL;
    this.pos += 1;
    return id;
  }

  private finishReason(): FinishReason {
    const start = this.plainString();
    const end = this.stringEnd;
    let name = '';
    for (let i = start; i < end; i += 1) name += String.fromCharCode(this.bytes[i] as number);
    if (!Object.hasOwn(FINISH_REASONS, name)) throw BAIL;
    return FINISH_REASONS[name] as FinishReason;
  }

  /** `{ key: value, ... }`: `member` reads the value of a key it wants (returns true) or
   * leaves it to be skipped (returns false). The opening brace is at `pos`. */
  private object(member: (key: number) => boolean): void {
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
  private elements(element: () => void): void {
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

  private numberArray(): number[] {
    const values: number[] = [];
    this.expect(OPEN_BRACKET);
    this.elements(() => values.push(this.number()));
    return values;
  }

  private integerArray(): number[] {
    const values: number[] = [];
    this.expect(OPEN_BRACKET);
    this.elements(() => {
      const value = this.number();
      if (!Number.isInteger(value)) throw BAIL;
      values.push(value);
    });
    return values;
  }

  /** A JSON number, exactly as JSON.parse reads it. */
  private number(): number {
    const { bytes } = this;
    const start = this.pos;
    let pos = start;
    const negative = bytes[pos] === MINUS;
    if (negative) pos += 1;
    let mantissa = 0;
    let significant = 0;
    let scale = 0;
    let exact = true;
    let byte = bytes[pos] ?? 0;
    if (byte === DIGIT_0) {
      pos += 1;
    } else if (byte > DIGIT_0 && byte <= DIGIT_9) {
      do {
        mantissa = mantissa * 10 + (byte - DIGIT_0);
        significant += 1;
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
      do {
        if (mantissa !== 0 || byte !== DIGIT_0) significant += 1;
        mantissa = mantissa * 10 + (byte - DIGIT_0);
        scale -= 1;
        pos += 1;
        byte = bytes[pos] ?? 0;
      } while (byte >= DIGIT_0 && byte <= DIGIT_9);
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
          exact = false;
        }
        pos += 1;
        byte = bytes[pos] ?? 0;
      } while (byte >= DIGIT_0 && byte <= DIGIT_9);
      scale += negativeExponent ? -exponent : exponent;
    }
    this.pos = pos;
    // Exact mantissa times an exact power of ten: one correctly rounded operation.
    if (exact && significant <= 16 && mantissa < MAX_EXACT && scale >= -22 && scale <= 22) {
      const magnitude =
        scale < 0 ? mantissa / (POW10[-scale] as number) : mantissa * (POW10[scale] as number);
      return negative ? -magnitude : magnitude;
    }
    return Number(this.latin1().toString('latin1', start, pos));
  }

  /** A string without escapes (keys and values the fast path compares): its content starts
   * at the returned offset and ends at `this.stringEnd`. */
  private plainString(): number {
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

  private keyIs(start: number, expected: Uint8Array): boolean {
    if (this.stringEnd - start !== expected.length) return false;
    for (let i = 0; i < expected.length; i += 1) {
      if (this.bytes[start + i] !== expected[i]) return false;
    }
    return true;
  }

  /** Checks one value of any type the way JSON.parse would, without building it. */
  private skipValue(depth: number): void {
    if (depth > MAX_DEPTH) throw BAIL;
    const byte = this.bytes[this.pos] ?? 0;
    if (byte === QUOTE) this.skipString();
    else if (byte === OPEN_BRACE) this.skipObject(depth);
    else if (byte === OPEN_BRACKET) this.skipArray(depth);
    else if (byte === MINUS || (byte >= DIGIT_0 && byte <= DIGIT_9)) this.skipNumber();
    else if (!this.literal('null') && !this.literal('true') && !this.literal('false')) {
      throw BAIL;
    }
  }

  private skipObject(depth: number): void {
    const { bytes } = this;
    this.pos += 1;
    this.skipWhitespace();
    if (bytes[this.pos] === CLOSE_BRACE) {
      this.pos += 1;
      return;
    }
    for (;;) {
      this.skipWhitespace();
      if (bytes[this.pos] !== QUOTE) throw BAIL;
      this.skipString();
      this.skipWhitespace();
      this.expect(COLON);
      this.skipWhitespace();
      this.skipValue(depth + 1);
      this.skipWhitespace();
      const next = bytes[this.pos];
      this.pos += 1;
      if (next === CLOSE_BRACE) return;
      if (next !== COMMA) throw BAIL;
    }
  }

  private skipArray(depth: number): void {
    const { bytes } = this;
    this.pos += 1;
    this.skipWhitespace();
    if (bytes[this.pos] === CLOSE_BRACKET) {
      this.pos += 1;
      return;
    }
    for (;;) {
      this.skipWhitespace();
      this.skipValue(depth + 1);
      this.skipWhitespace();
      const next = bytes[this.pos];
      this.pos += 1;
      if (next === CLOSE_BRACKET) return;
      if (next !== COMMA) throw BAIL;
    }
  }

  private skipNumber(): void {
    const { bytes } = this;
    let pos = this.pos;
    if (bytes[pos] === MINUS) pos += 1;
    if (bytes[pos] === DIGIT_0) pos += 1;
    else pos = skipDigits(bytes, pos);
    if (bytes[pos] === DOT) pos = skipDigits(bytes, pos + 1);
    if (bytes[pos] === 0x65 || bytes[pos] === 0x45) {
      pos += 1;
      if (bytes[pos] === MINUS || bytes[pos] === PLUS) pos += 1;
      pos = skipDigits(bytes, pos);
    }
    this.pos = pos;
  }

  /** A string of any content: escapes checked, raw control characters refused. UTF-8
   * continuation bytes are never a quote or a backslash, so bytes are scanned as they are. */
  private skipString(): void {
    const { bytes } = this;
    let pos = this.pos + 1;
    for (;;) {
      const byte = bytes[pos];
      if (byte === undefined || byte < 0x20) throw BAIL;
      pos += 1;
      if (byte === QUOTE) break;
      if (byte !== BACKSLASH) continue;
      const escaped = bytes[pos];
      pos += 1;
      if (escaped === 0x75) {
        for (let i = 0; i < 4; i += 1, pos += 1) if (!isHex(bytes[pos])) throw BAIL;
      } else if (!isSimpleEscape(escaped)) {
        throw BAIL;
      }
    }
    this.pos = pos;
  }

  private literal(word: 'null' | 'true' | 'false'): boolean {
    for (let i = 0; i < word.length; i += 1) {
      if (this.bytes[this.pos + i] !== word.charCodeAt(i)) return false;
    }
    this.pos += word.length;
    return true;
  }

  private expect(byte: number): void {
    if (this.bytes[this.pos] !== byte) throw BAIL;
    this.pos += 1;
  }

  private skipWhitespace(): void {
    const { bytes } = this;
    let byte = bytes[this.pos];
    while (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09) {
      this.pos += 1;
      byte = bytes[this.pos];
    }
  }
}

/** One or more digits from `pos`; the offset after them. */
function skipDigits(bytes: Uint8Array, pos: number): number {
  let byte = bytes[pos] ?? 0;
  if (byte < DIGIT_0 || byte > DIGIT_9) throw BAIL;
  let next = pos;
  do {
    next += 1;
    byte = bytes[next] ?? 0;
  } while (byte >= DIGIT_0 && byte <= DIGIT_9);
  return next;
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
