// forward / forward_backward result bytes -> ForwardResult without materialising the reply
// (docs/engines.md "Trainer API"). One pass over the UTF-8 bytes of a retrieve_future reply reads
// what convert.ts `fromWireForward` reads — each `loss_fn_outputs[i].logprobs.data` (or, when
// `logprobs` is absent or null, `scores.data`), written straight into a Float32Array, and the
// numeric `metrics` — and validates, without building, every other value (`dtype`, `shape`,
// `elementwise_loss`, `loss_fn_output_type`, ...). Anything it does not expect — malformed
// JSON, a field of another type, an escaped key, a duplicate field, a count other than the
// datums sent, or a body futures.ts would not call a result (`error`, `type: "try_again"`) —
// returns undefined, and the caller parses the body and classifies it as before, with the
// result or the error it always gave.
import {
  BAIL,
  DIGIT_0,
  DIGIT_9,
  JsonBytesReader,
  MINUS,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
  keyBytes,
  readOrBail,
} from '../http/json-bytes-reader.ts';
import type { ForwardResult } from '../types.ts';

const KEY_LOSS_FN_OUTPUTS = keyBytes('loss_fn_outputs');
const KEY_METRICS = keyBytes('metrics');
const KEY_TYPE = keyBytes('type');
const KEY_ERROR = keyBytes('error');
const KEY_LOGPROBS = keyBytes('logprobs');
const KEY_SCORES = keyBytes('scores');
const KEY_DATA = keyBytes('data');
const TRY_AGAIN = keyBytes('try_again');

/** Metric names as the whole body's decode gives them (a BOM inside a name is kept). */
const nameDecoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** The result as fromWireForward would return it for `expected` datums, or undefined: parse the
 * body and take the generic path. */
export function readForwardResult(bytes: Uint8Array, expected: number): ForwardResult | undefined {
  return readOrBail(() => new ForwardReader(bytes).result(expected));
}

class ForwardReader extends JsonBytesReader {
  result(expected: number): ForwardResult {
    let logprobs: Float32Array[] | undefined;
    let metrics: Record<string, number> | undefined;
    let sawType = false;
    this.skipWhitespace();
    this.object((key) => {
      if (this.keyIs(key, KEY_LOSS_FN_OUTPUTS)) {
        if (logprobs !== undefined) throw BAIL;
        logprobs = this.outputs(expected);
      } else if (this.keyIs(key, KEY_METRICS)) {
        if (metrics !== undefined) throw BAIL;
        metrics = this.metrics();
      } else if (this.keyIs(key, KEY_TYPE)) {
        if (sawType) throw BAIL;
        sawType = true;
        this.type();
      } else if (this.keyIs(key, KEY_ERROR)) {
        throw BAIL; // a failed future: classified (and its error built) from the parsed body
      } else {
        return false;
      }
      return true;
    });
    this.end();
    if (logprobs === undefined || logprobs.length !== expected) throw BAIL;
    return { logprobs, metrics: metrics ?? {} };
  }

  /** Hosted Tinker's "not yet" is `{type: "try_again"}`: not a result. */
  private type(): void {
    if (this.bytes[this.pos] !== QUOTE) {
      this.skipValue(1);
      return;
    }
    const start = this.plainString();
    if (this.keyIs(start, TRY_AGAIN)) throw BAIL;
  }

  private outputs(expected: number): Float32Array[] {
    const outputs: Float32Array[] = [];
    this.expect(OPEN_BRACKET);
    this.elements(() => {
      // More outputs than datums: the generic path's error, without reading the rest.
      if (outputs.length === expected) throw BAIL;
      outputs.push(this.output());
    });
    return outputs;
  }

  /** One loss output: `logprobs` unless it is absent or null, then `scores` (fromWireForward's
   * `output.logprobs ?? output.scores`). */
  private output(): Float32Array {
    let logprobs: Float32Array | null | undefined;
    let scores: Float32Array | null | undefined;
    this.object((key) => {
      if (this.keyIs(key, KEY_LOGPROBS)) {
        if (logprobs !== undefined) throw BAIL;
        logprobs = this.tensor();
      } else if (this.keyIs(key, KEY_SCORES)) {
        if (scores !== undefined) throw BAIL;
        scores = this.tensor();
      } else {
        return false;
      }
      return true;
    });
    const tensor = logprobs ?? scores;
    if (tensor === undefined || tensor === null) throw BAIL;
    return tensor;
  }

  /** A TensorData's `data` (its other members skipped), or null for a null member. */
  private tensor(): Float32Array | null {
    if (this.literal('null')) return null;
    let values: Float32Array | undefined;
    this.object((key) => {
      if (!this.keyIs(key, KEY_DATA)) return false;
      if (values !== undefined) throw BAIL;
      values = this.float32Array();
      return true;
    });
    if (values === undefined) throw BAIL;
    return values;
  }

  /** readMetrics: finite numbers kept, any other value dropped; not an object: none. */
  private metrics(): Record<string, number> {
    const metrics: Record<string, number> = {};
    if (this.bytes[this.pos] !== OPEN_BRACE) {
      this.skipValue(1);
      return metrics;
    }
    // JSON.parse keeps a repeated name's last value; rather than mirror that, bail.
    const seen = new Set<string>();
    this.object((key) => {
      const name = nameDecoder.decode(this.bytes.subarray(key, this.stringEnd));
      if (seen.has(name)) throw BAIL;
      seen.add(name);
      const byte = this.bytes[this.pos] ?? 0;
      if (byte !== MINUS && (byte < DIGIT_0 || byte > DIGIT_9)) return false;
      const value = this.number();
      if (Number.isFinite(value)) metrics[name] = value;
      return true;
    });
    return metrics;
  }
}
