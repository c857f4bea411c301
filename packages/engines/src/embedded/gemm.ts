// Matrix products for the embedded model, register-tiled 4×4: each tile keeps 16 accumulators in
// locals across the K loop, so every loaded value feeds 4 multiply-adds (≈3–4× a naive i-k-j
// loop in V8, measured by bench/embedded). Three layouts, each its own function so V8 keeps
// each loop monomorphic:
//   gemmNN: out(M,N) (+)= a(M,K) · b(K,N)
//   gemmNT: out(M,N) (+)= a(M,K) · b(N,K)ᵀ
//   gemmTN: out(M,N) (+)= a(K,M)ᵀ · b(K,N)
// `accumulate` adds into out instead of overwriting it. Tiles accumulate in float64.

/** Float64Array is accepted so tests can check gradients in double precision; production runs
 * use Float32Array only (one array type keeps V8's loops monomorphic). */
export type Floats = Float32Array | Float64Array;

type Index = (row: number, k: number) => number;

/** Rows and columns that do not fill a 4×4 tile (out already zeroed or accumulating). */
function edges(
  out: Floats,
  a: Floats,
  b: Floats,
  aIdx: Index,
  bIdx: Index,
  M: number,
  K: number,
  N: number,
): void {
  const M4 = M - (M % 4);
  const N4 = N - (N % 4);
  for (let i = 0; i < M; i++) {
    for (let j = i < M4 ? N4 : 0; j < N; j++) {
      let c = 0;
      for (let k = 0; k < K; k++) c += a[aIdx(i, k)]! * b[bIdx(j, k)]!;
      out[i * N + j]! += c;
    }
  }
}

export function gemmNN(
  out: Floats,
  a: Floats,
  b: Floats,
  M: number,
  K: number,
  N: number,
  accumulate = false,
): void {
  if (!accumulate) out.fill(0, 0, M * N);
  const M4 = M - (M % 4);
  const N4 = N - (N % 4);
  // prettier-ignore
  for (let i = 0; i < M4; i += 4) {
    const a0 = i * K;
    for (let j = 0; j < N4; j += 4) {
      let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
      let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
      for (let k = 0; k < K; k++) {
        const x0 = a[a0 + k]!, x1 = a[a0 + K + k]!, x2 = a[a0 + 2 * K + k]!, x3 = a[a0 + 3 * K + k]!;
        const bo = k * N + j, w0 = b[bo]!, w1 = b[bo + 1]!, w2 = b[bo + 2]!, w3 = b[bo + 3]!;
        c00 += x0 * w0; c01 += x0 * w1; c02 += x0 * w2; c03 += x0 * w3;
        c10 += x1 * w0; c11 += x1 * w1; c12 += x1 * w2; c13 += x1 * w3;
        c20 += x2 * w0; c21 += x2 * w1; c22 += x2 * w2; c23 += x2 * w3;
        c30 += x3 * w0; c31 += x3 * w1; c32 += x3 * w2; c33 += x3 * w3;
      }
      let o = i * N + j;
      out[o]! += c00; out[o + 1]! += c01; out[o + 2]! += c02; out[o + 3]! += c03; o += N;
      out[o]! += c10; out[o + 1]! += c11; out[o + 2]! += c12; out[o + 3]! += c13; o += N;
      out[o]! += c20; out[o + 1]! += c21; out[o + 2]! += c22; out[o + 3]! += c23; o += N;
      out[o]! += c30; out[o + 1]! += c31; out[o + 2]! += c32; out[o + 3]! += c33;
    }
  }
  edges(
    out,
    a,
    b,
    (i, k) => i * K + k,
    (j, k) => k * N + j,
    M,
    K,
    N,
  );
}

export function gemmNT(
  out: Floats,
  a: Floats,
  b: Floats,
  M: number,
  K: number,
  N: number,
  accumulate = false,
): void {
  if (!accumulate) out.fill(0, 0, M * N);
  const M4 = M - (M % 4);
  const N4 = N - (N % 4);
  // prettier-ignore
  for (let i = 0; i < M4; i += 4) {
    const a0 = i * K;
    for (let j = 0; j < N4; j += 4) {
      const b0 = j * K;
      let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
      let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
      for (let k = 0; k < K; k++) {
        const x0 = a[a0 + k]!, x1 = a[a0 + K + k]!, x2 = a[a0 + 2 * K + k]!, x3 = a[a0 + 3 * K + k]!;
        const w0 = b[b0 + k]!, w1 = b[b0 + K + k]!, w2 = b[b0 + 2 * K + k]!, w3 = b[b0 + 3 * K + k]!;
        c00 += x0 * w0; c01 += x0 * w1; c02 += x0 * w2; c03 += x0 * w3;
        c10 += x1 * w0; c11 += x1 * w1; c12 += x1 * w2; c13 += x1 * w3;
        c20 += x2 * w0; c21 += x2 * w1; c22 += x2 * w2; c23 += x2 * w3;
        c30 += x3 * w0; c31 += x3 * w1; c32 += x3 * w2; c33 += x3 * w3;
      }
      let o = i * N + j;
      out[o]! += c00; out[o + 1]! += c01; out[o + 2]! += c02; out[o + 3]! += c03; o += N;
      out[o]! += c10; out[o + 1]! += c11; out[o + 2]! += c12; out[o + 3]! += c13; o += N;
      out[o]! += c20; out[o + 1]! += c21; out[o + 2]! += c22; out[o + 3]! += c23; o += N;
      out[o]! += c30; out[o + 1]! += c31; out[o + 2]! += c32; out[o + 3]! += c33;
    }
  }
  edges(
    out,
    a,
    b,
    (i, k) => i * K + k,
    (j, k) => j * K + k,
    M,
    K,
    N,
  );
}

export function gemmTN(
  out: Floats,
  a: Floats,
  b: Floats,
  M: number,
  K: number,
  N: number,
  accumulate = false,
): void {
  if (!accumulate) out.fill(0, 0, M * N);
  const M4 = M - (M % 4);
  const N4 = N - (N % 4);
  // prettier-ignore
  for (let i = 0; i < M4; i += 4) {
    for (let j = 0; j < N4; j += 4) {
      let c00 = 0, c01 = 0, c02 = 0, c03 = 0, c10 = 0, c11 = 0, c12 = 0, c13 = 0;
      let c20 = 0, c21 = 0, c22 = 0, c23 = 0, c30 = 0, c31 = 0, c32 = 0, c33 = 0;
      for (let k = 0; k < K; k++) {
        const ao = k * M + i, x0 = a[ao]!, x1 = a[ao + 1]!, x2 = a[ao + 2]!, x3 = a[ao + 3]!;
        const bo = k * N + j, w0 = b[bo]!, w1 = b[bo + 1]!, w2 = b[bo + 2]!, w3 = b[bo + 3]!;
        c00 += x0 * w0; c01 += x0 * w1; c02 += x0 * w2; c03 += x0 * w3;
        c10 += x1 * w0; c11 += x1 * w1; c12 += x1 * w2; c13 += x1 * w3;
        c20 += x2 * w0; c21 += x2 * w1; c22 += x2 * w2; c23 += x2 * w3;
        c30 += x3 * w0; c31 += x3 * w1; c32 += x3 * w2; c33 += x3 * w3;
      }
      let o = i * N + j;
      out[o]! += c00; out[o + 1]! += c01; out[o + 2]! += c02; out[o + 3]! += c03; o += N;
      out[o]! += c10; out[o + 1]! += c11; out[o + 2]! += c12; out[o + 3]! += c13; o += N;
      out[o]! += c20; out[o + 1]! += c21; out[o + 2]! += c22; out[o + 3]! += c23; o += N;
      out[o]! += c30; out[o + 1]! += c31; out[o + 2]! += c32; out[o + 3]! += c33;
    }
  }
  edges(
    out,
    a,
    b,
    (i, k) => k * M + i,
    (j, k) => k * N + j,
    M,
    K,
    N,
  );
}
