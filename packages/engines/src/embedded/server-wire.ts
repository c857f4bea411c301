// Tinker wire JSON (src/tinker/wire.ts) → embedded trainer calls, with FastAPI-style 422
// validation (`{detail: [{loc, msg, type}]}`), and results → wire JSON.
import type * as Wire from '../tinker/wire.ts';
import type { AdamParams, Datum, LossFn, LossFnConfig } from '../types.ts';
import type { ModelRunResult } from './trainer-model.ts';

export class ValidationError extends Error {
  constructor(readonly issues: Wire.ValidationIssue[]) {
    super(issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '));
    this.name = 'ValidationError';
  }
}

type Json = Record<string, unknown>;
type Loc = Array<string | number>;

const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(loc: Loc, msg: string, type: string): never {
  throw new ValidationError([{ loc: ['body', ...loc], msg, type }]);
}

export function object(body: unknown, loc: Loc = []): Json {
  if (!isObject(body)) fail(loc, 'Input should be a valid dictionary', 'dict_type');
  return body;
}

export function string(obj: Json, key: string, loc: Loc = []): string {
  const v = obj[key];
  if (v === undefined) fail([...loc, key], 'Field required', 'missing');
  if (typeof v !== 'string') fail([...loc, key], 'Input should be a valid string', 'string_type');
  return v;
}

function number(obj: Json, key: string, loc: Loc, fallback?: number): number {
  const v = obj[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    fail([...loc, key], 'Field required', 'missing');
  }
  if (typeof v !== 'number' || !Number.isFinite(v))
    fail([...loc, key], 'Input should be a valid number', 'float_type');
  return v;
}

export function optionalInteger(obj: Json, key: string, loc: Loc = []): number | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (!Number.isInteger(v)) fail([...loc, key], 'Input should be a valid integer', 'int_type');
  return v as number;
}

const LOSSES: readonly LossFn[] = ['cross_entropy', 'importance_sampling', 'ppo', 'bradley_terry'];

function tensor(raw: unknown, loc: Loc, length: number): Int32Array | Float32Array {
  const t = object(raw, loc);
  const data = t['data'];
  if (!Array.isArray(data) || !data.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    fail([...loc, 'data'], 'Input should be a list of finite numbers', 'list_type');
  }
  if (data.length !== length)
    fail(
      [...loc, 'data'],
      `expected ${length} values (one per model_input token), got ${data.length}`,
      'value_error',
    );
  const dtype = t['dtype'];
  if (dtype === 'int64') {
    if (!data.every((v) => Number.isInteger(v) && Math.abs(v as number) < 2 ** 31))
      fail([...loc, 'data'], 'int64 values must be integers', 'int_type');
    return Int32Array.from(data as number[]);
  }
  if (dtype === 'float32') return Float32Array.from(data as number[]);
  return fail([...loc, 'dtype'], "Input should be 'int64' or 'float32'", 'literal_error');
}

/** ModelInput chunks → token ids (only `encoded_text` chunks exist in Anneal). */
export function modelInputTokens(raw: unknown, loc: Loc): number[] {
  const input = object(raw, loc);
  const chunks = input['chunks'];
  if (!Array.isArray(chunks)) fail([...loc, 'chunks'], 'Input should be a valid list', 'list_type');
  const tokens: number[] = [];
  chunks.forEach((c, i) => {
    const chunk = object(c, [...loc, 'chunks', i]);
    if (chunk['type'] !== undefined && chunk['type'] !== 'encoded_text')
      fail(
        [...loc, 'chunks', i, 'type'],
        "only 'encoded_text' chunks are supported",
        'literal_error',
      );
    const ids = chunk['tokens'];
    if (!Array.isArray(ids) || !ids.every((v) => Number.isInteger(v) && v >= 0))
      fail([...loc, 'chunks', i, 'tokens'], 'Input should be a list of token ids', 'list_type');
    tokens.push(...(ids as number[]));
  });
  return tokens;
}

export interface LossCall {
  data: Datum[];
  lossFn: LossFn;
  config: LossFnConfig;
}

/** `forward_backward_input` / `forward_input`. */
export function parseLossCall(
  body: Json,
  key: 'forward_backward_input' | 'forward_input',
): LossCall {
  const input = object(body[key], [key]);
  const lossFn = input['loss_fn'];
  if (!LOSSES.includes(lossFn as LossFn))
    fail([key, 'loss_fn'], `Input should be one of ${LOSSES.join(', ')}`, 'literal_error');
  const rawData = input['data'];
  if (!Array.isArray(rawData) || rawData.length === 0)
    fail([key, 'data'], 'Input should be a non-empty list', 'list_type');
  const data = rawData.map((raw, i): Datum => {
    const loc = [key, 'data', i];
    const datum = object(raw, loc);
    const modelInput = modelInputTokens(datum['model_input'], [...loc, 'model_input']);
    const inputs = object(datum['loss_fn_inputs'] ?? {}, [...loc, 'loss_fn_inputs']);
    const lossFnInputs: Datum['lossFnInputs'] = {};
    for (const [name, t] of Object.entries(inputs))
      lossFnInputs[name] = tensor(t, [...loc, 'loss_fn_inputs', name], modelInput.length);
    return { modelInput, lossFnInputs };
  });
  const config: LossFnConfig = {};
  const rawConfig = input['loss_fn_config'];
  if (rawConfig !== undefined && rawConfig !== null) {
    const c = object(rawConfig, [key, 'loss_fn_config']);
    if (c['clip_low_threshold'] !== undefined)
      config.clipLowThreshold = number(c, 'clip_low_threshold', [key, 'loss_fn_config']);
    if (c['clip_high_threshold'] !== undefined)
      config.clipHighThreshold = number(c, 'clip_high_threshold', [key, 'loss_fn_config']);
    // An Anneal extension (docs/engines.md "Logprobs and temperature"): score at the sampler's T.
    if (c['temperature'] !== undefined)
      config.temperature = number(c, 'temperature', [key, 'loss_fn_config']);
  }
  return { data, lossFn: lossFn as LossFn, config };
}

/** `adam_params` with docs/engines.md's defaults for omitted fields. */
export function parseAdam(body: Json): AdamParams {
  const loc = ['adam_params'];
  const p = object(body['adam_params'], loc);
  return {
    learningRate: number(p, 'learning_rate', loc, 1e-4),
    beta1: number(p, 'beta1', loc, 0.9),
    beta2: number(p, 'beta2', loc, 0.95),
    eps: number(p, 'eps', loc, 1e-12),
    weightDecay: number(p, 'weight_decay', loc, 0),
    gradClipNorm: number(p, 'grad_clip_norm', loc, 0),
  };
}

const floats = (a: Float32Array): Wire.TensorData => ({
  data: Array.from(a),
  dtype: 'float32',
  shape: [a.length],
});

/** Value heads answer `scores` (one per datum); LM heads `logprobs` per target token. */
export function toWireForward(
  result: ModelRunResult,
  valueHead: boolean,
): Wire.ForwardBackwardOutput {
  return {
    loss_fn_output_type: 'scalar',
    loss_fn_outputs: result.outputs.map((o) =>
      valueHead
        ? { scores: floats(o.logprobs), elementwise_loss: floats(o.elementwise) }
        : { logprobs: floats(o.logprobs), elementwise_loss: floats(o.elementwise) },
    ),
    metrics: result.metrics,
  };
}
