// Dense kernels of the embedded transformer (forward + backward) over flat row-major arrays;
// the matrix products are register-tiled (gemm.ts); nothing allocates per element.
import type { Floats } from './gemm.ts';
import { gemmNN, gemmNT, gemmTN } from './gemm.ts';

export type { Floats } from './gemm.ts';

/** out(M,N) = a(M,K) · w(K,N) + bias(N). */
export function matmul(
  out: Floats,
  a: Floats,
  w: Floats,
  bias: Floats | null,
  M: number,
  K: number,
  N: number,
): void {
  gemmNN(out, a, w, M, K, N);
  if (!bias) return;
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) out[i * N + j]! += bias[j]!;
}

/** Gradients of out = a·w + bias: dA = dOut·wᵀ (overwritten), dW += aᵀ·dOut, dBias += Σ_i dOut. */
export function matmulBackward(
  dA: Floats | null,
  dW: Floats,
  dBias: Floats | null,
  dOut: Floats,
  a: Floats,
  w: Floats,
  M: number,
  K: number,
  N: number,
): void {
  if (dA) gemmNT(dA, dOut, w, M, N, K); // (M,K) = (M,N)·(K,N)ᵀ
  gemmTN(dW, a, dOut, K, M, N, true); // (K,N) += (M,K)ᵀ·(M,N)
  if (dBias) for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) dBias[j]! += dOut[i * N + j]!;
}

/** out(M,N) = a(M,K) · bᵀ where b is (N,K) (tied LM head: logits = h · wteᵀ). */
export function matmulTransposed(
  out: Floats,
  a: Floats,
  b: Floats,
  M: number,
  K: number,
  N: number,
): void {
  gemmNT(out, a, b, M, K, N);
}

/** Gradients of out = a·bᵀ: dA = dOut·b (overwritten), dB += dOutᵀ·a. */
export function matmulTransposedBackward(
  dA: Floats,
  dB: Floats,
  dOut: Floats,
  a: Floats,
  b: Floats,
  M: number,
  K: number,
  N: number,
): void {
  gemmNN(dA, dOut, b, M, N, K); // (M,K) = (M,N)·(N,K)
  gemmTN(dB, dOut, a, N, M, K, true); // (N,K) += (M,N)ᵀ·(M,K)
}

export const LAYER_NORM_EPS = 1e-5;

/** y = (x − mean) / sqrt(var + eps) · gamma + beta per row of C; keeps xhat and rstd for backward. */
export function layerNorm(
  y: Floats,
  xhat: Floats,
  rstd: Floats,
  x: Floats,
  gamma: Floats,
  beta: Floats,
  M: number,
  C: number,
): void {
  for (let i = 0; i < M; i++) {
    const row = i * C;
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[row + c]!;
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) {
      const d = x[row + c]! - mean;
      variance += d * d;
    }
    const r = 1 / Math.sqrt(variance / C + LAYER_NORM_EPS);
    rstd[i] = r;
    for (let c = 0; c < C; c++) {
      const n = (x[row + c]! - mean) * r;
      xhat[row + c] = n;
      y[row + c] = n * gamma[c]! + beta[c]!;
    }
  }
}

/** dx += LayerNorm backward of dy; dGamma, dBeta accumulate. */
export function layerNormBackward(
  dx: Floats,
  dGamma: Floats,
  dBeta: Floats,
  dy: Floats,
  xhat: Floats,
  rstd: Floats,
  gamma: Floats,
  M: number,
  C: number,
): void {
  for (let i = 0; i < M; i++) {
    const row = i * C;
    let meanD = 0; // mean(dxhat)
    let meanDX = 0; // mean(dxhat · xhat)
    for (let c = 0; c < C; c++) {
      const dxh = dy[row + c]! * gamma[c]!;
      meanD += dxh;
      meanDX += dxh * xhat[row + c]!;
      dGamma[c]! += dy[row + c]! * xhat[row + c]!;
      dBeta[c]! += dy[row + c]!;
    }
    meanD /= C;
    meanDX /= C;
    const r = rstd[i]!;
    for (let c = 0; c < C; c++) {
      const dxh = dy[row + c]! * gamma[c]!;
      dx[row + c]! += r * (dxh - meanD - xhat[row + c]! * meanDX);
    }
  }
}

const GELU_K = Math.sqrt(2 / Math.PI);
const GELU_C = 0.044715;

/** GELU, tanh approximation (GPT-2): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function gelu(y: Floats, x: Floats, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    y[i] = 0.5 * v * (1 + Math.tanh(GELU_K * (v + GELU_C * v * v * v)));
  }
}

/** dx = dy · gelu'(x) (overwrites dx). */
export function geluBackward(dx: Floats, dy: Floats, x: Floats, n: number): void {
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    const t = Math.tanh(GELU_K * (v + GELU_C * v * v * v));
    const dInner = GELU_K * (1 + 3 * GELU_C * v * v);
    dx[i] = dy[i]! * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * dInner);
  }
}
