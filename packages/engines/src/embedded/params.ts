// Configuration and parameter layout of the embedded transformer: every tensor lives in one
// flat array (params, grads and both Adam moments share the layout), addressed by name.
import type { Floats } from './kernels.ts';
import { createRng, normal } from './rng.ts';

export type ModelHead = 'lm' | 'value';

export interface ModelConfig {
  vocabSize: number;
  blockSize: number;
  nLayer: number;
  nHead: number;
  nEmbd: number;
  head: ModelHead;
}

/** Sized so SFT → RM → GRPO → eval fits in minutes on 2 CPU cores (README "Embedded engines"). */
export const DEFAULT_MODEL_CONFIG: Readonly<ModelConfig> = Object.freeze({
  vocabSize: 264, // 256 UTF-8 bytes + 8 markers of the byte tokenizer (tokenizer.ts)
  blockSize: 256, // longest sequence (prompt + response) the model attends over
  nLayer: 2, // transformer blocks
  nHead: 4, // attention heads; head size = nEmbd / nHead = 16
  nEmbd: 64, // residual stream width
  head: 'lm', // 'lm': LM head tied to the token embedding; 'value': scalar value head (docs/recipe.md §5)
});

export interface TensorSpec {
  name: string;
  shape: number[];
  offset: number;
  size: number;
  /** AdamW decays matrices and embeddings, never biases or LayerNorm gains (nanoGPT). */
  decay: boolean;
}

export interface ParamLayout {
  config: ModelConfig;
  tensors: TensorSpec[];
  byName: Map<string, TensorSpec>;
  size: number;
}

export function validateConfig(config: ModelConfig): ModelConfig {
  const positive = ['vocabSize', 'blockSize', 'nLayer', 'nHead', 'nEmbd'] as const;
  for (const key of positive) {
    const value = config[key];
    if (!Number.isInteger(value) || value <= 0) {
      throw new RangeError(`model config ${key} must be a positive integer, got ${value}`);
    }
  }
  if (config.nEmbd % config.nHead !== 0) {
    throw new RangeError(`model config nEmbd (${config.nEmbd}) must be divisible by nHead`);
  }
  if (config.head !== 'lm' && config.head !== 'value') {
    throw new RangeError(`model config head must be 'lm' or 'value', got ${String(config.head)}`);
  }
  return config;
}

export function paramLayout(config: ModelConfig): ParamLayout {
  validateConfig(config);
  const { vocabSize: V, blockSize, nLayer, nEmbd: C } = config;
  const tensors: TensorSpec[] = [];
  let offset = 0;
  const add = (name: string, shape: number[], decay: boolean) => {
    const size = shape.reduce((a, b) => a * b, 1);
    tensors.push({ name, shape, offset, size, decay });
    offset += size;
  };
  add('wte', [V, C], true); // token embedding, also the LM head (tied)
  add('wpe', [blockSize, C], true); // learned position embedding
  for (let l = 0; l < nLayer; l++) {
    add(`h.${l}.ln1.g`, [C], false);
    add(`h.${l}.ln1.b`, [C], false);
    add(`h.${l}.attn.w`, [C, 3 * C], true); // fused q, k, v projection
    add(`h.${l}.attn.b`, [3 * C], false);
    add(`h.${l}.proj.w`, [C, C], true);
    add(`h.${l}.proj.b`, [C], false);
    add(`h.${l}.ln2.g`, [C], false);
    add(`h.${l}.ln2.b`, [C], false);
    add(`h.${l}.fc.w`, [C, 4 * C], true);
    add(`h.${l}.fc.b`, [4 * C], false);
    add(`h.${l}.fc2.w`, [4 * C, C], true);
    add(`h.${l}.fc2.b`, [C], false);
  }
  add('lnf.g', [C], false);
  add('lnf.b', [C], false);
  if (config.head === 'value') {
    add('vhead.w', [C], true); // score = lnf(x)[last] · w + b
    add('vhead.b', [1], false);
  }
  return { config, tensors, byName: new Map(tensors.map((t) => [t.name, t])), size: offset };
}

export interface LayerViews {
  ln1g: Floats;
  ln1b: Floats;
  attnW: Floats;
  attnB: Floats;
  projW: Floats;
  projB: Floats;
  ln2g: Floats;
  ln2b: Floats;
  fcW: Floats;
  fcB: Floats;
  fc2W: Floats;
  fc2B: Floats;
}

export interface ParamViews {
  wte: Floats;
  wpe: Floats;
  layers: LayerViews[];
  lnfG: Floats;
  lnfB: Floats;
  vheadW: Floats | null;
  vheadB: Floats | null;
}

/** Named subarray views of a flat params (or grads) array. */
export function views(layout: ParamLayout, flat: Floats): ParamViews {
  if (flat.length !== layout.size) {
    throw new RangeError(`parameter array has ${flat.length} values, layout needs ${layout.size}`);
  }
  const get = (name: string): Floats => {
    const spec = layout.byName.get(name);
    if (!spec) throw new Error(`no tensor ${name} in layout`);
    return flat.subarray(spec.offset, spec.offset + spec.size);
  };
  const layers: LayerViews[] = [];
  for (let l = 0; l < layout.config.nLayer; l++) {
    const p = `h.${l}.`;
    layers.push({
      ln1g: get(`${p}ln1.g`),
      ln1b: get(`${p}ln1.b`),
      attnW: get(`${p}attn.w`),
      attnB: get(`${p}attn.b`),
      projW: get(`${p}proj.w`),
      projB: get(`${p}proj.b`),
      ln2g: get(`${p}ln2.g`),
      ln2b: get(`${p}ln2.b`),
      fcW: get(`${p}fc.w`),
      fcB: get(`${p}fc.b`),
      fc2W: get(`${p}fc2.w`),
      fc2B: get(`${p}fc2.b`),
    });
  }
  const value = layout.config.head === 'value';
  return {
    wte: get('wte'),
    wpe: get('wpe'),
    layers,
    lnfG: get('lnf.g'),
    lnfB: get('lnf.b'),
    vheadW: value ? get('vhead.w') : null,
    vheadB: value ? get('vhead.b') : null,
  };
}

/** GPT-2 init: N(0, 0.02) weights, residual projections scaled by 1/√(2·nLayer), zero biases. */
export function initParams(layout: ParamLayout, flat: Floats, seed: number): void {
  const rng = createRng(seed);
  const residualStd = 0.02 / Math.sqrt(2 * layout.config.nLayer);
  for (const spec of layout.tensors) {
    const view = flat.subarray(spec.offset, spec.offset + spec.size);
    const gain = /\.g$/.test(spec.name);
    if (gain) view.fill(1);
    else if (!spec.decay) view.fill(0);
    else {
      const std = /\.(proj|fc2)\.w$/.test(spec.name) ? residualStd : 0.02;
      for (let i = 0; i < view.length; i++) view[i] = std * normal(rng);
    }
  }
}

/** Copies every tensor present in both layouts with the same shape (LM backbone → value model). */
export function copyMatchingTensors(
  from: ParamLayout,
  fromFlat: Floats,
  to: ParamLayout,
  toFlat: Floats,
): string[] {
  const copied: string[] = [];
  for (const spec of to.tensors) {
    const source = from.byName.get(spec.name);
    if (!source || source.shape.join('x') !== spec.shape.join('x')) continue;
    toFlat.set(fromFlat.subarray(source.offset, source.offset + source.size), spec.offset);
    copied.push(spec.name);
  }
  return copied;
}
