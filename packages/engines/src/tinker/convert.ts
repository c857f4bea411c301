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
import type * as Wire from './wire.ts';

/** Tensor aligned with `modelInput` positions -> TensorData (Int32Array = int64 ids). */
export function toTensorData(tensor: Tensor): Wire.TensorData {
  return {
    data: Array.from(tensor),
    dtype: tensor instanceof Int32Array ? 'int64' : 'float32',
    shape: [tensor.length],
  };
}

/** Checks alignment (every loss input as long as the model input) and converts. */
export function toWireDatum(datum: Datum, index: number): Wire.Datum {
  const length = datum.modelInput.length;
  if (length === 0) throw new RangeError(`data[${index}].modelInput is empty`);
  const inputs: Record<string, Wire.TensorData> = {};
  for (const [name, tensor] of Object.entries(datum.lossFnInputs)) {
    if (tensor.length !== length) {
      throw new RangeError(
        `data[${index}].lossFnInputs.${name} has ${tensor.length} values for ${length} input tokens`,
      );
    }
    // JSON has no NaN or Infinity (they would go out as null): refuse here, naming the value
    const bad = tensor.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) {
      throw new RangeError(
        `data[${index}].lossFnInputs.${name}[${bad}] is ${tensor[bad]}: a trainer takes finite numbers only`,
      );
    }
    inputs[name] = toTensorData(tensor);
  }
  return {
    model_input: { chunks: [{ type: 'encoded_text', tokens: [...datum.modelInput] }] },
    loss_fn_inputs: inputs,
  };
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
    if (!data.every((v) => typeof v === 'number')) {
      throw new TypeError(`loss_fn_outputs[${i}].logprobs.data holds non-numbers`);
    }
    return Float32Array.from(data as number[]);
  });
  return { logprobs, metrics: readMetrics(body['metrics']) };
}

export function fromWireOptimStep(body: unknown): OptimStepResult {
  const metrics = readMetrics(isObject(body) ? body['metrics'] : undefined);
  return { gradNorm: gradNormOf(metrics), metrics };
}
