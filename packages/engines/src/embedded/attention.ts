// Causal multi-head self-attention core, softmax(q·kᵀ/√hs + causal mask)·v, for one sequence.
// qkv is the fused projection (T, 3C): columns [0,C) = q, [C,2C) = k, [2C,3C) = v; head h owns
// columns h·hs … (h+1)·hs of each. Per head, q/k/v are gathered into contiguous (T, hs) arrays
// so the products run through the tiled gemm kernels; they compute the full (T, T) square and
// the mask zeroes s > t (twice the necessary work, still faster than scalar loops).
import type { Floats } from './gemm.ts';
import { gemmNN, gemmNT, gemmTN } from './gemm.ts';

function gatherHead(dst: Floats, qkv: Floats, T: number, C: number, column: number, hs: number) {
  for (let t = 0; t < T; t++) {
    for (let d = 0; d < hs; d++) dst[t * hs + d] = qkv[t * 3 * C + column + d]!;
  }
}

function scatterHead(
  dst: Floats,
  src: Floats,
  T: number,
  stride: number,
  column: number,
  hs: number,
) {
  for (let t = 0; t < T; t++) {
    for (let d = 0; d < hs; d++) dst[t * stride + column + d] = src[t * hs + d]!;
  }
}

interface HeadScratch {
  q: Floats; // (T, hs)
  k: Floats; // (T, hs)
  v: Floats; // (T, hs)
  y: Floats; // (T, hs)
}

function scratch(like: Floats, T: number, hs: number): HeadScratch {
  const make = () =>
    like instanceof Float64Array ? new Float64Array(T * hs) : new Float32Array(T * hs);
  return { q: make(), k: make(), v: make(), y: make() };
}

/** y(T,C) = attention of qkv(T,3C); att(H,T,T) keeps the probabilities (0 above the diagonal). */
export function causalAttention(
  y: Floats,
  att: Floats,
  qkv: Floats,
  T: number,
  C: number,
  H: number,
): void {
  const hs = C / H;
  const scale = 1 / Math.sqrt(hs);
  const s = scratch(y, T, hs);
  for (let h = 0; h < H; h++) {
    gatherHead(s.q, qkv, T, C, h * hs, hs);
    gatherHead(s.k, qkv, T, C, C + h * hs, hs);
    gatherHead(s.v, qkv, T, C, 2 * C + h * hs, hs);
    const a = att.subarray(h * T * T, (h + 1) * T * T); // (T, T)
    gemmNT(a, s.q, s.k, T, hs, T); // raw scores q·kᵀ
    for (let t = 0; t < T; t++) {
      const row = t * T;
      let max = -Infinity;
      for (let j = 0; j <= t; j++) max = Math.max(max, a[row + j]! * scale);
      let sum = 0;
      for (let j = 0; j <= t; j++) {
        const e = Math.exp(a[row + j]! * scale - max);
        a[row + j] = e;
        sum += e;
      }
      for (let j = 0; j <= t; j++) a[row + j]! /= sum;
      a.fill(0, row + t + 1, row + T); // causal mask
    }
    gemmNN(s.y, a, s.v, T, T, hs); // (T, hs) = att · v
    scatterHead(y, s.y, T, C, h * hs, hs);
  }
}

/** dqkv(T,3C) (overwritten) from dy(T,C), through both products and the softmax. */
export function causalAttentionBackward(
  dqkv: Floats,
  dy: Floats,
  att: Floats,
  qkv: Floats,
  T: number,
  C: number,
  H: number,
): void {
  const hs = C / H;
  const scale = 1 / Math.sqrt(hs);
  const s = scratch(dy, T, hs); // q, k, v of the head; y holds the head's dy
  const d = scratch(dy, T, hs); // dq, dk, dv of the head
  const dScore = dy instanceof Float64Array ? new Float64Array(T * T) : new Float32Array(T * T);
  for (let h = 0; h < H; h++) {
    gatherHead(s.q, qkv, T, C, h * hs, hs);
    gatherHead(s.k, qkv, T, C, C + h * hs, hs);
    gatherHead(s.v, qkv, T, C, 2 * C + h * hs, hs);
    for (let t = 0; t < T; t++) {
      for (let j = 0; j < hs; j++) s.y[t * hs + j] = dy[t * C + h * hs + j]!;
    }
    const a = att.subarray(h * T * T, (h + 1) * T * T); // (T, T) probabilities
    gemmTN(d.v, a, s.y, T, T, hs); // dv = attᵀ · dy
    gemmNT(dScore, s.y, s.v, T, hs, T); // dAtt = dy · vᵀ
    for (let t = 0; t < T; t++) {
      const row = t * T;
      let pDotDAtt = 0; // Σ_j p_j · dp_j (softmax backward)
      for (let j = 0; j <= t; j++) pDotDAtt += a[row + j]! * dScore[row + j]!;
      for (let j = 0; j <= t; j++)
        dScore[row + j] = a[row + j]! * (dScore[row + j]! - pDotDAtt) * scale;
      dScore.fill(0, row + t + 1, row + T);
    }
    gemmNN(d.q, dScore, s.k, T, T, hs); // dq = dScore · k
    gemmTN(d.k, dScore, s.q, T, T, hs); // dk = dScoreᵀ · q
    scatterHead(dqkv, d.q, T, 3 * C, h * hs, hs);
    scatterHead(dqkv, d.k, T, 3 * C, C + h * hs, hs);
    scatterHead(dqkv, d.v, T, 3 * C, 2 * C + h * hs, hs);
  }
}
