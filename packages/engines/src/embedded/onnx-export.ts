// ONNX export (opset 17) of the embedded transformer: the same math as model.ts, run by
// onnxruntime-node for sampling and reward scoring. Contracts (README "Embedded engines"):
//   LM model.onnx:    input_ids int64 [batch, seq] → logits float [batch, seq, V]
//   LM decoder.onnx:  input_ids int64 [batch, seq], past_key_l / past_value_l float
//                     [batch, H, past, hs] per layer l (past may be 0) → logits [batch, seq, V],
//                     present_key_l / present_value_l [batch, H, past + seq, hs] (KV cache)
//   value model.onnx: input_ids int64 [batch, seq] (right-padded, any pad id), lengths int64
//                     [batch] (tokens of prompt + response per row) → score float [batch],
//                     read at position lengths − 1; causal attention makes padding inert.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LAYER_NORM_EPS } from './kernels.ts';
import { GraphBuilder } from './onnx-graph.ts';
import type { ModelJson } from './onnx-proto.ts';
import { DataType, encodeModel, valueInfo } from './onnx-proto.ts';
import type { ModelConfig } from './params.ts';
import { paramLayout } from './params.ts';

export const ONNX_EXPORT_FORMAT = 'anneal-embedded-onnx/v1';
const MASKED = -1e9; // added where s > t; exp underflows to exactly 0 as in model.ts

interface Weights {
  get(name: string): Float32Array;
}

function weightsOf(config: ModelConfig, params: Float32Array): Weights {
  const layout = paramLayout(config);
  if (params.length !== layout.size)
    throw new RangeError(`params have ${params.length} values, need ${layout.size}`);
  return {
    get(name) {
      const spec = layout.byName.get(name);
      if (!spec) throw new Error(`no tensor ${name}`);
      return params.subarray(spec.offset, spec.offset + spec.size);
    },
  };
}

/** Builds the transformer trunk; returns the name of ln_f(x), shape (batch, seq, C). */
function trunk(g: GraphBuilder, config: ModelConfig, w: Weights, withPast: boolean): string {
  const { nLayer, nHead: H, nEmbd: C, vocabSize: V, blockSize } = config;
  const hs = C / H;
  const ids = g.input(valueInfo('input_ids', DataType.INT64, ['batch', 'seq']));
  const pastDims = ['batch', H, 'past', hs];
  const past = withPast
    ? Array.from({ length: nLayer }, (_, l) => [
        g.input(valueInfo(`past_key_${l}`, DataType.FLOAT, pastDims)),
        g.input(valueInfo(`past_value_${l}`, DataType.FLOAT, pastDims)),
      ])
    : [];
  const zero = g.int64('zero', [0], []);
  const one = g.int64('one', [1], []);
  const axes0 = g.int64('axes0', [0]);
  const axes1 = g.int64('axes1', [1]);
  // positions: queries are past … past+seq−1, keys 0 … past+seq−1
  const seq = g.node(
    'Squeeze',
    [g.node('Shape', [ids], { start: { int: 1 }, end: { int: 2 } })],
    {},
    'seq_len',
  );
  const pastLen = withPast
    ? g.node(
        'Squeeze',
        [g.node('Shape', [past[0]![0]!], { start: { int: 2 }, end: { int: 3 } })],
        {},
        'past_len',
      )
    : zero;
  const total = g.node('Add', [pastLen, seq], {}, 'total_len');
  const qPos = g.node('Range', [pastLen, total, one], {}, 'q_pos'); // (seq)
  const kPos = g.node('Range', [zero, total, one], {}, 'k_pos'); // (total)
  const allowed = g.node(
    'LessOrEqual',
    [g.node('Unsqueeze', [kPos, axes0]), g.node('Unsqueeze', [qPos, axes1])],
    {},
    'causal',
  ); // (seq, total): k ≤ q
  const tok = g.node(
    'Gather',
    [g.weight('wte', [V, C], w.get('wte')), ids],
    { axis: { int: 0 } },
    'tok_emb',
  ); // (B, S, C)
  const pos = g.node(
    'Gather',
    [g.weight('wpe', [blockSize, C], w.get('wpe')), qPos],
    { axis: { int: 0 } },
    'pos_emb',
  ); // (S, C)
  let x = g.node('Add', [tok, pos], {}, 'x');
  const ln = (input: string, prefix: string) =>
    g.nodeN(
      'LayerNormalization',
      [
        input,
        g.weight(`${prefix}.g`, [C], w.get(`${prefix}.g`)),
        g.weight(`${prefix}.b`, [C], w.get(`${prefix}.b`)),
      ],
      [`${prefix}_out`],
      { axis: { int: -1 }, epsilon: { float: LAYER_NORM_EPS } },
    )[0]!;
  const linear = (input: string, prefix: string, inDim: number, outDim: number) =>
    g.node(
      'Add',
      [
        g.node('MatMul', [input, g.weight(`${prefix}.w`, [inDim, outDim], w.get(`${prefix}.w`))]),
        g.weight(`${prefix}.b`, [outDim], w.get(`${prefix}.b`)),
      ],
      {},
      `${prefix}_out`,
    );
  const headShape = g.int64('head_shape', [0, 0, H, hs]);
  const mergedShape = g.int64('merged_shape', [0, 0, C]);
  const split = g.int64('qkv_split', [C, C, C]);
  const scale = g.float('att_scale', 1 / Math.sqrt(hs));
  const masked = g.float('masked', MASKED);
  const half = g.float('half', 0.5);
  const geluC = g.float('gelu_c', 0.044715);
  const geluK = g.float('gelu_k', Math.sqrt(2 / Math.PI));
  const unit = g.float('unit', 1);
  const presents: string[] = [];
  for (let l = 0; l < nLayer; l++) {
    const p = `h.${l}`;
    const qkv = linear(ln(x, `${p}.ln1`), `${p}.attn`, C, 3 * C); // (B, S, 3C)
    const [q, k, v] = g.nodeN('Split', [qkv, split], [`${p}.q`, `${p}.k`, `${p}.v`], {
      axis: { int: 2 },
    });
    const heads = (t: string) =>
      g.node('Transpose', [g.node('Reshape', [t, headShape])], { perm: { ints: [0, 2, 1, 3] } }); // (B, H, S, hs)
    let kh = heads(k!);
    let vh = heads(v!);
    if (withPast) {
      kh = g.node('Concat', [past[l]![0]!, kh], { axis: { int: 2 } }, `present_key_${l}`); // (B, H, total, hs)
      vh = g.node('Concat', [past[l]![1]!, vh], { axis: { int: 2 } }, `present_value_${l}`);
      presents.push(kh, vh);
    }
    const scores = g.node('Mul', [
      g.node('MatMul', [heads(q!), g.node('Transpose', [kh], { perm: { ints: [0, 1, 3, 2] } })]),
      scale,
    ]); // (B, H, S, total)
    const att = g.node('Softmax', [g.node('Where', [allowed, scores, masked])], {
      axis: { int: -1 },
    });
    const y = g.node('Reshape', [
      g.node('Transpose', [g.node('MatMul', [att, vh])], { perm: { ints: [0, 2, 1, 3] } }),
      mergedShape,
    ]); // (B, S, C)
    x = g.node('Add', [x, linear(y, `${p}.proj`, C, C)], {}, `${p}.x1`);
    const u = linear(ln(x, `${p}.ln2`), `${p}.fc`, C, 4 * C); // (B, S, 4C)
    const cube = g.node('Mul', [g.node('Mul', [u, u]), u]);
    const inner = g.node('Mul', [g.node('Add', [u, g.node('Mul', [cube, geluC])]), geluK]);
    const act = g.node('Mul', [
      g.node('Mul', [u, half]),
      g.node('Add', [g.node('Tanh', [inner]), unit]),
    ]); // GELU (tanh)
    x = g.node('Add', [x, linear(act, `${p}.fc2`, 4 * C, C)], {}, `${p}.x2`);
  }
  return ln(x, 'lnf');
}

function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++)
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

export function buildLmGraph(
  config: ModelConfig,
  params: Float32Array,
  withPast: boolean,
): ModelJson {
  if (config.head !== 'lm') throw new Error('buildLmGraph needs an LM-head config');
  const g = new GraphBuilder();
  const w = weightsOf(config, params);
  const { vocabSize: V, nEmbd: C, nHead: H, nLayer } = config;
  const hF = trunk(g, config, w, withPast);
  const wteT = g.weight('lm_head', [C, V], transpose(w.get('wte'), V, C)); // tied: wteᵀ
  g.node('MatMul', [hF, wteT], {}, 'logits');
  const outputs = [valueInfo('logits', DataType.FLOAT, ['batch', 'seq', V])];
  if (withPast) {
    for (let l = 0; l < nLayer; l++) {
      for (const kind of ['key', 'value']) {
        outputs.push(
          valueInfo(`present_${kind}_${l}`, DataType.FLOAT, ['batch', H, 'total', C / H]),
        );
      }
    }
  }
  return g.build(
    'anneal_lm',
    outputs,
    'input_ids int64 [batch, seq] -> logits float [batch, seq, vocab]',
  );
}

export function buildValueGraph(config: ModelConfig, params: Float32Array): ModelJson {
  if (config.head !== 'value') throw new Error('buildValueGraph needs a value-head config');
  const g = new GraphBuilder();
  const w = weightsOf(config, params);
  const C = config.nEmbd;
  const hF = trunk(g, config, w, false);
  const lengths = g.input(valueInfo('lengths', DataType.INT64, ['batch']));
  const values = g.node('Add', [
    g.node('MatMul', [hF, g.weight('vhead.w', [C, 1], w.get('vhead.w'))]),
    g.weight('vhead.b', [1], w.get('vhead.b')),
  ]); // (B, S, 1)
  const perPosition = g.node('Squeeze', [values, g.int64('axes2', [2])]); // (B, S)
  const last = g.node('Unsqueeze', [
    g.node('Sub', [lengths, g.int64('one_1d', [1])]),
    g.int64('axes1v', [1]),
  ]); // (B, 1)
  const picked = g.node('GatherElements', [perPosition, last], { axis: { int: 1 } }); // (B, 1)
  g.node('Squeeze', [picked, g.int64('axes1s', [1])], {}, 'score');
  return g.build(
    'anneal_value',
    [valueInfo('score', DataType.FLOAT, ['batch'])],
    'input_ids int64 [batch, seq] (right-padded), lengths int64 [batch] -> score float [batch]',
  );
}

export interface OnnxExport {
  /** The export directory (SamplerWeights.path). */
  dir: string;
  /** model.onnx: logits (LM) or score (value head). */
  model: string;
  /** decoder.onnx with KV cache (LM only). */
  decoder: string | null;
}

async function writeFileAtomic(file: string, data: Uint8Array | string): Promise<void> {
  await writeFile(`${file}.tmp`, data);
  await rename(`${file}.tmp`, file);
}

/** Writes model.onnx (+ decoder.onnx for LMs) and export.json into dir. */
export async function exportOnnx(
  dir: string,
  config: ModelConfig,
  params: Float32Array,
): Promise<OnnxExport> {
  await mkdir(dir, { recursive: true });
  const version = ONNX_EXPORT_FORMAT;
  const model = path.join(dir, 'model.onnx');
  let decoder: string | null = null;
  if (config.head === 'lm') {
    await writeFileAtomic(model, encodeModel(buildLmGraph(config, params, false), version));
    decoder = path.join(dir, 'decoder.onnx');
    await writeFileAtomic(decoder, encodeModel(buildLmGraph(config, params, true), version));
  } else {
    await writeFileAtomic(model, encodeModel(buildValueGraph(config, params), version));
  }
  const manifest = {
    format: ONNX_EXPORT_FORMAT,
    config,
    model: 'model.onnx',
    decoder: decoder ? 'decoder.onnx' : null,
  };
  await writeFileAtomic(path.join(dir, 'export.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return { dir, model, decoder };
}
