// In-process engine types <-> Tinker wire JSON: datums, loss outputs, metrics, grad norm.
import type {
  AdamParams,
  Datum,
  ForwardResult,
  LossFn,
  LossFnConfig,
  OptimStepResult,
  Tensor,
} from '../types.ts';
import { isObject } from '../http/request.ts';
import { gradNormOf, readMetrics } from './metrics.ts';
import type { JsonBytesWriter } from '../http/json-text.ts';
import type * as Wire from './wire.ts';

const TENSOR_DTYPE = (tensor: Tensor): Wire.TensorDtype =>
  tensor instanceof Int32Array ? 'int64' : 'float32';

/** Checks a datum before it is sent: a model input, every loss input as long as it, and every
 * float value finite (JSON has no NaN or Infinity: they would go out as null; an Int32Array
 * holds integers only, so ids need no check, and the check stays monomorphic). */
export function checkWireDatum(datum: Datum, index: number): void {
  const length = datum.modelInput.length;
  if (length === 0) throw new RangeError(`data[${index}].modelInput is empty`);
  for (const [name, tensor] of Object.entries(datum.lossFnInputs)) {
    if (tensor.length !== length) {
      throw new RangeError(
        `data[${index}].lossFnInputs.${name} has ${tensor.length} values for ${length} input tokens`,
      );
    }
    const bad = tensor instanceof Float32Array ? firstNonFinite(tensor) : -1;
    if (bad >= 0) {
      throw new RangeError(
        `data[${index}].lossFnInputs.${name}[${bad}] is ${tensor[bad]}: a trainer takes finite numbers only`,
      );
    }
  }
}

/**
 * Writes a checked datum (checkWireDatum) as the wire's `Datum` JSON: `model_input` as one
 * encoded_text chunk, each loss input a `TensorData` with `data`, `dtype` (Int32Array = int64
 * ids) and `shape`, straight from the typed arrays (no JS array of each tensor in between).
 * Ids are the bytes JSON.stringify would write; a float32 tensor's values are text that reads
 * back as the same float32 (JsonBytesWriter.float32s), not the 17 digits of the value as a
 * double: every trainer holds a float32 input as float32 (SkyRL@a9564572e
 * skyrl/backends/jax.py `pad_batch(…, np.float32)`, skyrl/backends/skyrl_train_backend.py
 * `torch.tensor(…, dtype=torch.float32)`; the embedded trainer's server-wire.ts Float32Array).
 */
export function writeWireDatum(writer: JsonBytesWriter, datum: Datum): void {
  writer.raw('{"model_input":{"chunks":[{"type":"encoded_text","tokens":[');
  const ids = datum.modelInput;
  const idsStart = writer.written;
  if (ids instanceof Int32Array) writer.int32s(ids);
  else writer.numbers(ids);
  const idsEnd = writer.written;
  writer.raw(']}]},"loss_fn_inputs":{');
  let first = true;
  for (const [name, tensor] of Object.entries(datum.lossFnInputs)) {
    writer.raw(`${first ? '' : ','}${JSON.stringify(name)}:{"data":[`);
    if (tensor instanceof Float32Array) writer.float32s(tensor);
    else if (ids instanceof Int32Array && isShiftedView(tensor, ids)) {
      // target_tokens as shiftedDatum makes them, the model input's memory one id on: the
      // model input's text after its first id, then the last id (half a step's id text)
      writer.again(writer.indexOf(COMMA, idsStart, idsEnd) + 1, idsEnd);
      writer.raw(',').int32s(tensor.subarray(tensor.length - 1));
    } else writer.int32s(tensor);
    writer.raw(`],"dtype":"${TENSOR_DTYPE(tensor)}","shape":[${tensor.length}]}`);
    first = false;
  }
  writer.raw('}}');
}

const COMMA = 0x2c;

/** Whether `tensor` is the memory of `ids` one id on, as long: tensor[i] is ids[i + 1] (the
 * same bytes, so no value need be compared), and ids has at least two (its text a comma). */
function isShiftedView(tensor: Int32Array, ids: Int32Array): boolean {
  return (
    tensor.buffer === ids.buffer &&
    tensor.byteOffset === ids.byteOffset + 4 &&
    tensor.length === ids.length &&
    ids.length >= 2
  );
}

/** About how many bytes writeWireDatum writes for these datums (8 a value: ids, float32 text
 * and the commas between; more than that only for long float32 text), so the request's buffer
 * is sized once instead of grown by copies. */
export function expectedBodyBytes(datums: readonly Datum[]): number {
  let values = 0;
  for (const datum of datums) {
    values += datum.modelInput.length;
    for (const tensor of Object.values(datum.lossFnInputs)) values += tensor.length;
  }
  return 8 * values + 512 * datums.length + 1024;
}

/** Index of the first value that is NaN or infinite, or -1 (a plain loop: no value boxed). */
function firstNonFinite(tensor: Float32Array): number {
  for (let i = 0; i < tensor.length; i += 1) {
    const value = tensor[i] as number;
    if (value - value !== 0) return i;
  }
  return -1;
}

/** Loss inputs each loss reads (docs/engines.md "Losses"). */
export const REQUIRED_LOSS_INPUTS: Record<LossFn, readonly string[]> = {
  cross_entropy: ['target_tokens', 'weights'],
  importance_sampling: ['target_tokens', 'logprobs', 'advantages'],
  ppo: ['target_tokens', 'logprobs', 'advantages'],
  bradley_terry: [],
};

export function checkLossInputs(data: readonly Datum[], lossFn: LossFn): void {
  data.forEach((datum, i) => {
    for (const name of REQUIRED_LOSS_INPUTS[lossFn]) {
      if (!(name in datum.lossFnInputs)) {
        throw new RangeError(`data[${i}].lossFnInputs.${name} is required by loss '${lossFn}'`);
      }
    }
  });
}

export function toWireLossConfig(config?: LossFnConfig): Wire.LossFnConfig | undefined {
  if (!config) return undefined;
  const wire: Wire.LossFnConfig = {};
  if (config.clipLowThreshold !== undefined) wire['clip_low_threshold'] = config.clipLowThreshold;
  if (config.clipHighThreshold !== undefined)
    wire['clip_high_threshold'] = config.clipHighThreshold;
  // An Anneal extension the embedded trainer honours; submission refuses T ≠ 1 for trainers that
  // do not (docs/engines.md "Logprobs and temperature"), so T = 1 is never sent.
  if (config.temperature !== undefined && config.temperature !== 1) {
    wire['temperature'] = config.temperature;
  }
  return Object.keys(wire).length > 0 ? wire : undefined;
}

export function toWireAdam(params: AdamParams): Wire.AdamParams {
  const wire: Wire.AdamParams = {
    learning_rate: params.learningRate,
    beta1: params.beta1,
    beta2: params.beta2,
    eps: params.eps,
    weight_decay: params.weightDecay,
  };
  // An Anneal extension: only sent when clipping is asked for.
  if (params.gradClipNorm > 0) wire.grad_clip_norm = params.gradClipNorm;
  return wire;
}

/** forward / forward_backward result: one output per datum, `logprobs` (or value-head
 * `scores`) as Float32Array. Throws with the path of the first malformed field. */
export function fromWireForward(body: unknown, expected: number): ForwardResult {
  if (!isObject(body) || !Array.isArray(body['loss_fn_outputs'])) {
    throw new TypeError('result has no loss_fn_outputs array');
  }
  const outputs: unknown[] = body['loss_fn_outputs'];
  if (outputs.length !== expected) {
    throw new TypeError(`loss_fn_outputs has ${outputs.length} entries for ${expected} datums`);
  }
  const logprobs = outputs.map((output, i) => {
    const tensor = isObject(output) ? (output['logprobs'] ?? output['scores']) : undefined;
    if (!isObject(tensor) || !Array.isArray(tensor['data'])) {
      throw new TypeError(`loss_fn_outputs[${i}].logprobs is missing`);
    }
    const data: unknown[] = tensor['data'];
    const values = new Float32Array(data.length);
    for (let t = 0; t < data.length; t += 1) {
      const value = data[t];
      if (typeof value !== 'number') {
        throw new TypeError(`loss_fn_outputs[${i}].logprobs.data holds non-numbers`);
      }
      values[t] = value;
    }
    return values;
  });
  return { logprobs, metrics: readMetrics(body['metrics']) };
}

export function fromWireOptimStep(body: unknown): OptimStepResult {
  const metrics = readMetrics(isObject(body) ? body['metrics'] : undefined);
  return { gradNorm: gradNormOf(metrics), metrics };
}
