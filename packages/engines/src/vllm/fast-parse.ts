// `/v1/completions` reply bytes -> SampledSequence[] without materialising the reply
// (docs/engines.md "vLLM"). One pass over the UTF-8 bytes reads only what parse.ts reads (the
// choices' `index`, `token_ids`, `logprobs.token_logprobs`, `logprobs.tokens` when `token_ids`
// is absent, `finish_reason`) and validates, without building, every other value (the per-token
// `top_logprobs` objects, `tokens`, `text_offset`, `text`, ...). Anything it does not expect —
// malformed JSON, a field of another type, a null logprob, an escaped key, a duplicate field,
// an unknown finish reason — returns undefined, and the caller takes the generic path
// (JSON.parse + parse.ts), which gives the result or the error it always gave. The logprobs are
// read as float32, JSON.parse's double rounded once (what parse.ts keeps): vLLM computes them in
// float32 and writes each widened to a double, 17 significant digits of which float32 needs
// the first 9 (readFloat32). The byte scanning itself is http/json-bytes-reader.ts.
import {
  BAIL,
  CLOSE_BRACKET,
  COMMA,
  DIGIT_0,
  DIGIT_9,
  JsonBytesReader,
  doubled,
  OPEN_BRACKET,
  QUOTE,
  keyBytes,
  readOrBail,
} from '../http/json-bytes-reader.ts';
import type { FinishReason, SampledSequence } from '../types.ts';

const DOT = 0x2e;
const INT32_MAX = 0x7fffffff;

const FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  stop: 'stop',
  length: 'length',
  abort: 'abort',
  repetition: 'length',
};

const KEY_CHOICES = keyBytes('choices');
const KEY_INDEX = keyBytes('index');
const KEY_TOKEN_IDS = keyBytes('token_ids');
const KEY_LOGPROBS = keyBytes('logprobs');
const KEY_FINISH_REASON = keyBytes('finish_reason');
const KEY_TOKEN_LOGPROBS = keyBytes('token_logprobs');
const KEY_TOKENS = keyBytes('tokens');
const TOKEN_ID_PREFIX = keyBytes('token_id:');

interface ChoiceFields {
  index: number;
  tokenIds: Int32Array | null | undefined;
  tokenLogprobs: Float32Array | undefined;
  /** Offset of `logprobs.tokens`'s value, read only when `token_ids` is absent. */
  tokenStrings: number;
  finishReason: FinishReason | undefined;
  sawLogprobs: boolean;
}

/** The reply's choices as parseCompletion would return them, or undefined: use the generic path.
 * `withLogprobs` false: the request sent no `logprobs`, so vLLM wrote `"logprobs": null`
 * (vllm/entrypoints/openai/completion/serving.py@030ea52e request_output_to_completion_response)
 * and the ids come from `token_ids` alone; such a choice's `logprobs` is null. */

export function extractCompletion(
  bytes: Uint8Array,
  expectedChoices: number,
  withLogprobs = true,
): SampledSequence[] | undefined {
  return readOrBail(() => new Extractor(bytes, withLogprobs).completion(expectedChoices));
}

class Extractor extends JsonBytesReader {
  constructor(
    bytes: Uint8Array,
    private readonly withLogprobs: boolean,
  ) {
    super(bytes);
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
    this.end();
    if (!sawChoices || found.length !== expectedChoices) throw BAIL;
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
        if (this.withLogprobs || !this.literal('null')) this.logprobs(fields);
      } else if (this.keyIs(key, KEY_FINISH_REASON)) {
        if (sawFinish) throw BAIL;
        sawFinish = true;
        fields.finishReason = this.finishReason();
      } else {
        return false;
      }
      return true;
    });
    const { tokenLogprobs, finishReason, tokenIds } = fields;
    if (finishReason === undefined) throw BAIL;
    if (tokenLogprobs === undefined) {
      if (this.withLogprobs || !tokenIds) throw BAIL;
      return { index: fields.index, sequence: { tokens: tokenIds, logprobs: null, finishReason } };
    }
    const tokens = tokenIds ? tokenIds : this.tokenStrings(fields);
    if (tokens.length !== tokenLogprobs.length) throw BAIL;
    return { index: fields.index, sequence: { tokens, logprobs: tokenLogprobs, finishReason } };
  }

  private logprobs(fields: ChoiceFields): void {
    this.object((key) => {
      if (this.keyIs(key, KEY_TOKEN_LOGPROBS)) {
        if (fields.tokenLogprobs !== undefined) throw BAIL;
        fields.tokenLogprobs = this.float32Array();
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

  /** integerArray's ids as vLLM writes them (`[1,22,333]`: digits and commas, no leading zero,
   * int32) by one loop: their count, `pos` after the array; -1 and `pos` unchanged for anything
   * else (whitespace, a sign, a fraction, an exponent, past int32), which plainInteger reads. */
  private flatIds(): number {
    const { bytes } = this;
    let pos = this.pos;
    let count = 0;
    if (bytes[pos] === CLOSE_BRACKET) {
      this.pos = pos + 1;
      return 0;
    }
    for (;;) {
      const first = pos;
      let byte = bytes[pos] ?? 0;
      let value = 0;
      while (byte >= DIGIT_0 && byte <= DIGIT_9) {
        value = value * 10 + (byte - DIGIT_0);
        pos += 1;
        byte = bytes[pos] ?? 0;
      }
      const digits = pos - first;
      if (digits === 0 || value > INT32_MAX || (digits > 1 && bytes[first] === DIGIT_0)) return -1;
      if (count === idScratch.length) idScratch = doubled(idScratch);
      idScratch[count] = value;
      count += 1;
      pos += 1;
      if (byte === COMMA) continue;
      if (byte !== CLOSE_BRACKET) return -1;
      this.pos = pos;
      return count;
    }
  }

  /** Ids: integers an Int32Array holds as they are (anything else takes the generic path,
   * -0 included: JSON.parse keeps it). */
  private integerArray(): Int32Array {
    const read = this.arrayFromKernel((kernel, pos) => kernel.int32s(pos));
    if (read !== undefined) return read;
    this.expect(OPEN_BRACKET);
    const flat = this.flatIds();
    if (flat >= 0) return idScratch.slice(0, flat);
    let count = 0;
    this.elements(() => {
      const value = this.plainInteger();
      if ((value | 0) !== value || Object.is(value, -0)) throw BAIL;
      if (count === idScratch.length) idScratch = doubled(idScratch);
      idScratch[count] = value;
      count += 1;
    });
    return idScratch.slice(0, count);
  }

  /** A number at `pos` written as up to 10 digits alone (an id as vLLM writes it: no sign,
   * fraction or exponent), read by a loop made for that; any other number through readNumber. */
  private plainInteger(): number {
    const { bytes } = this;
    const start = this.pos;
    let pos = start;
    let value = 0;
    let byte = bytes[pos] ?? 0;
    while (byte >= DIGIT_0 && byte <= DIGIT_9 && pos - start < 10) {
      value = value * 10 + (byte - DIGIT_0);
      pos += 1;
      byte = bytes[pos] ?? 0;
    }
    const plain =
      pos > start &&
      (bytes[start] !== DIGIT_0 || pos === start + 1) &&
      byte !== DOT &&
      byte !== 0x65 && // e
      byte !== 0x45 && // E
      !(byte >= DIGIT_0 && byte <= DIGIT_9);
    if (plain) {
      this.pos = pos;
      return value;
    }
    this.readNumber();
    return this.numberRead[0]!;
  }
}

// Scratch for the ids being read, reused from reply to reply (as float32Array's, json-bytes-reader.ts).
let idScratch = new Int32Array(4096);
