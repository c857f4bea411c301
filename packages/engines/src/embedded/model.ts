// The embedded decoder-only transformer (GPT-2 shaped, after nanoGPT's model.py): token +
// position embeddings, pre-LayerNorm blocks of causal multi-head self-attention and a GELU
// MLP, a final LayerNorm, then either the LM head (tied to the token embedding) or a scalar
// value head read at the last position (Bradley–Terry reward model, docs/recipe.md §5).
// One sequence at a time (B = 1): a batch is a loop over sequences, so ragged batches need no
// padding and gradients simply accumulate. Shapes in comments: T tokens, C width, H heads,
// hs = C / H head size, V vocabulary.
import { causalAttention, causalAttentionBackward } from './attention.ts';
import type { Floats } from './kernels.ts';
import {
  gelu,
  geluBackward,
  layerNorm,
  layerNormBackward,
  matmul,
  matmulBackward,
  matmulTransposed,
  matmulTransposedBackward,
} from './kernels.ts';
import type { ModelConfig, ParamLayout, ParamViews } from './params.ts';
import { paramLayout, views } from './params.ts';

interface BlockActivations {
  ln1Hat: Floats; // (T, C) normalised x, for LayerNorm backward
  ln1Rstd: Floats; // (T)
  h1: Floats; // (T, C) ln_1(x)
  qkv: Floats; // (T, 3C)
  att: Floats; // (H, T, T) attention probabilities
  attY: Floats; // (T, C) heads re-assembled, before c_proj
  x1: Floats; // (T, C) x + attn(ln_1(x))
  ln2Hat: Floats; // (T, C)
  ln2Rstd: Floats; // (T)
  h2: Floats; // (T, C) ln_2(x1)
  fcPre: Floats; // (T, 4C) before GELU
  fcAct: Floats; // (T, 4C) after GELU
}

export interface Activations {
  tokens: ArrayLike<number>; // (T)
  T: number;
  blocks: BlockActivations[];
  lnfHat: Floats; // (T, C)
  lnfRstd: Floats; // (T)
  hF: Floats; // (T, C) ln_f(x): input of the head
  logits: Floats | null; // (T, V) LM head only
  logSumExp: Float64Array | null; // (T) log Σ_v exp(logits / temperature), LM head only
  /** Temperature τ the LM head's distribution is taken at: π = softmax(logits / τ). */
  temperature: number;
  score: number; // value head only: hF[T-1] · w + b
}

export class Transformer {
  readonly config: ModelConfig;
  readonly layout: ParamLayout;
  readonly params: Floats;
  private readonly p: ParamViews;

  /** params: flat Float32Array (or Float64Array for gradient checks) in `paramLayout` order. */
  constructor(config: ModelConfig, params: Floats) {
    this.config = config;
    this.layout = paramLayout(config);
    this.params = params;
    this.p = views(this.layout, params);
  }

  private alloc(n: number): Floats {
    return this.params instanceof Float64Array ? new Float64Array(n) : new Float32Array(n);
  }

  forward(tokens: ArrayLike<number>, temperature = 1): Activations {
    const { vocabSize: V, blockSize, nEmbd: C, nHead: H } = this.config;
    const T = tokens.length;
    if (T === 0 || T > blockSize) {
      throw new RangeError(`sequence length ${T} must be within 1..${blockSize} (blockSize)`);
    }
    if (!(Number.isFinite(temperature) && temperature > 0)) {
      throw new RangeError(`temperature must be a finite number > 0, got ${temperature}`);
    }
    const p = this.p;
    let x = this.alloc(T * C); // (T, C) = wte[tokens] + wpe[0..T)
    for (let t = 0; t < T; t++) {
      const id = tokens[t]!;
      if (!Number.isInteger(id) || id < 0 || id >= V) {
        throw new RangeError(`token id ${id} at position ${t} is outside the vocabulary (${V})`);
      }
      for (let c = 0; c < C; c++) x[t * C + c] = p.wte[id * C + c]! + p.wpe[t * C + c]!;
    }
    const blocks: BlockActivations[] = [];
    for (const w of p.layers) {
      const a = this.blockActivations(T);
      layerNorm(a.h1, a.ln1Hat, a.ln1Rstd, x, w.ln1g, w.ln1b, T, C);
      matmul(a.qkv, a.h1, w.attnW, w.attnB, T, C, 3 * C); // (T, 3C)
      causalAttention(a.attY, a.att, a.qkv, T, C, H); // (T, C)
      matmul(a.x1, a.attY, w.projW, w.projB, T, C, C);
      for (let i = 0; i < T * C; i++) a.x1[i]! += x[i]!; // residual
      layerNorm(a.h2, a.ln2Hat, a.ln2Rstd, a.x1, w.ln2g, w.ln2b, T, C);
      matmul(a.fcPre, a.h2, w.fcW, w.fcB, T, C, 4 * C); // (T, 4C)
      gelu(a.fcAct, a.fcPre, T * 4 * C);
      const out = this.alloc(T * C);
      matmul(out, a.fcAct, w.fc2W, w.fc2B, T, 4 * C, C); // (T, C)
      for (let i = 0; i < T * C; i++) out[i]! += a.x1[i]!; // residual
      blocks.push(a);
      x = out;
    }
    const lnfHat = this.alloc(T * C);
    const lnfRstd = this.alloc(T);
    const hF = this.alloc(T * C);
    layerNorm(hF, lnfHat, lnfRstd, x, p.lnfG, p.lnfB, T, C);
    const acts: Activations = {
      tokens,
      T,
      blocks,
      lnfHat,
      lnfRstd,
      hF,
      logits: null,
      logSumExp: null,
      temperature,
      score: 0,
    };
    if (p.vheadW && p.vheadB) {
      let s = p.vheadB[0]!;
      for (let c = 0; c < C; c++) s += hF[(T - 1) * C + c]! * p.vheadW[c]!;
      acts.score = s;
      return acts;
    }
    const logits = this.alloc(T * V);
    matmulTransposed(logits, hF, p.wte, T, C, V); // (T, V) = hF · wteᵀ (tied head)
    const logSumExp = new Float64Array(T); // of logits / τ (τ = 1 unless scoring a sampler's T)
    const inv = 1 / temperature;
    for (let t = 0; t < T; t++) {
      let max = -Infinity;
      for (let v = 0; v < V; v++) max = Math.max(max, logits[t * V + v]! * inv);
      let sum = 0;
      for (let v = 0; v < V; v++) sum += Math.exp(logits[t * V + v]! * inv - max);
      logSumExp[t] = max + Math.log(sum);
    }
    acts.logits = logits;
    acts.logSumExp = logSumExp;
    return acts;
  }

  /** log π(targets[t] | tokens[..t]) per position (T), in float64, at the forward's τ. */
  tokenLogprobs(acts: Activations, targets: ArrayLike<number>): Float64Array {
    const { logits, logSumExp } = requireLm(acts);
    const V = this.config.vocabSize;
    const out = new Float64Array(acts.T);
    for (let t = 0; t < acts.T; t++) {
      const target = targets[t]!;
      if (!Number.isInteger(target) || target < 0 || target >= V) {
        throw new RangeError(`target token ${target} at position ${t} is outside the vocabulary`);
      }
      out[t] = logits[t * V + target]! / acts.temperature - logSumExp[t]!;
    }
    return out;
  }

  /** Accumulates into grads the gradient of Σ_t dLogp[t] · logπ(targets[t]) (LM head). */
  backwardLm(
    acts: Activations,
    targets: ArrayLike<number>,
    dLogp: ArrayLike<number>,
    grads: Floats,
  ): void {
    const { logits, logSumExp } = requireLm(acts);
    const { vocabSize: V, nEmbd: C } = this.config;
    const T = acts.T;
    const g = views(this.layout, grads);
    // (T, V) = dLogp / τ · (onehot(target) − softmax(logits / τ))
    const dLogits = this.alloc(T * V);
    const inv = 1 / acts.temperature;
    for (let t = 0; t < T; t++) {
      const d = dLogp[t]! * inv;
      if (d === 0) continue;
      for (let v = 0; v < V; v++) {
        dLogits[t * V + v] = -d * Math.exp(logits[t * V + v]! * inv - logSumExp[t]!);
      }
      dLogits[t * V + targets[t]!]! += d;
    }
    const dhF = this.alloc(T * C);
    matmulTransposedBackward(dhF, g.wte, dLogits, acts.hF, this.p.wte, T, C, V);
    this.backwardTrunk(acts, dhF, g);
  }

  /** Accumulates into grads the gradient of dScore · score (value head). */
  backwardValue(acts: Activations, dScore: number, grads: Floats): void {
    const C = this.config.nEmbd;
    const T = acts.T;
    const g = views(this.layout, grads);
    if (!this.p.vheadW || !g.vheadW || !g.vheadB) throw new Error('model has no value head');
    const dhF = this.alloc(T * C); // only the last position feeds the score
    for (let c = 0; c < C; c++) {
      dhF[(T - 1) * C + c] = dScore * this.p.vheadW[c]!;
      g.vheadW[c]! += dScore * acts.hF[(T - 1) * C + c]!;
    }
    g.vheadB[0]! += dScore;
    this.backwardTrunk(acts, dhF, g);
  }

  /** From dL/d ln_f(x) back through the blocks to the embeddings. */
  private backwardTrunk(acts: Activations, dhF: Floats, g: ParamViews): void {
    const { nEmbd: C, nHead: H } = this.config;
    const T = acts.T;
    const p = this.p;
    const dx = this.alloc(T * C); // (T, C) gradient of the residual stream
    layerNormBackward(dx, g.lnfG, g.lnfB, dhF, acts.lnfHat, acts.lnfRstd, p.lnfG, T, C);
    const dFc = this.alloc(T * 4 * C); // (T, 4C) scratch
    const dh = this.alloc(T * C); // (T, C) scratch
    const dAttY = this.alloc(T * C);
    const dQkv = this.alloc(T * 3 * C);
    for (let l = this.config.nLayer - 1; l >= 0; l--) {
      const a = acts.blocks[l]!;
      const w = p.layers[l]!;
      const gw = g.layers[l]!;
      // MLP branch: x2 = x1 + fc2(gelu(fc(ln_2(x1))))
      matmulBackward(dFc, gw.fc2W, gw.fc2B, dx, a.fcAct, w.fc2W, T, 4 * C, C);
      geluBackward(dFc, dFc, a.fcPre, T * 4 * C);
      matmulBackward(dh, gw.fcW, gw.fcB, dFc, a.h2, w.fcW, T, C, 4 * C);
      layerNormBackward(dx, gw.ln2g, gw.ln2b, dh, a.ln2Hat, a.ln2Rstd, w.ln2g, T, C);
      // attention branch: x1 = x + proj(attn(ln_1(x)))
      matmulBackward(dAttY, gw.projW, gw.projB, dx, a.attY, w.projW, T, C, C);
      causalAttentionBackward(dQkv, dAttY, a.att, a.qkv, T, C, H);
      matmulBackward(dh, gw.attnW, gw.attnB, dQkv, a.h1, w.attnW, T, C, 3 * C);
      // the residual passes dx straight through; ln_1's gradient adds to it in place
      layerNormBackward(dx, gw.ln1g, gw.ln1b, dh, a.ln1Hat, a.ln1Rstd, w.ln1g, T, C);
    }
    for (let t = 0; t < T; t++) {
      const id = acts.tokens[t]!;
      for (let c = 0; c < C; c++) {
        g.wte[id * C + c]! += dx[t * C + c]!;
        g.wpe[t * C + c]! += dx[t * C + c]!;
      }
    }
  }

  private blockActivations(T: number): BlockActivations {
    const { nEmbd: C, nHead: H } = this.config;
    return {
      ln1Hat: this.alloc(T * C),
      ln1Rstd: this.alloc(T),
      h1: this.alloc(T * C),
      qkv: this.alloc(T * 3 * C),
      att: this.alloc(H * T * T),
      attY: this.alloc(T * C),
      x1: this.alloc(T * C),
      ln2Hat: this.alloc(T * C),
      ln2Rstd: this.alloc(T),
      h2: this.alloc(T * C),
      fcPre: this.alloc(T * 4 * C),
      fcAct: this.alloc(T * 4 * C),
    };
  }
}

function requireLm(acts: Activations): { logits: Floats; logSumExp: Float64Array } {
  if (!acts.logits || !acts.logSumExp) throw new Error('model has no LM head');
  return { logits: acts.logits, logSumExp: acts.logSumExp };
}
