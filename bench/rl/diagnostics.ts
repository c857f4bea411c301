// Diagnostic loops that explain why the scalar JavaScript path cannot reach the memory floor (not
// alternatives to use): the same fused pass as @anneal/rl's stepTokenMathScalar with Math.exp
// replaced by 1 + x, and a bare streaming pass (read both logprob arrays, write one output).
import type { FlatStep } from './data.ts';

/** stepTokenMathScalar's loop shape minus the exponential: what the rest of the pass costs. */
export function fusedPassWithoutExp(step: FlatStep, out: Float32Array): number {
  const { logpTrain, logpInfer, offsets } = step;
  let total = 0;
  let min = Infinity;
  let max = -Infinity;
  let outside = 0;
  for (let i = 0; i + 1 < offsets.length; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    let ratioSum = 0;
    let logRatioSum = 0;
    for (let t = start; t < end; t++) {
      const logRatio = logpTrain[t]! - logpInfer[t]!;
      const notRatio = 1 + logRatio;
      ratioSum += notRatio;
      logRatioSum += logRatio;
      if (notRatio < min) min = notRatio;
      if (notRatio > max) max = notRatio;
      if (notRatio < 0.5 || notRatio > 2) outside++;
    }
    total += ratioSum + logRatioSum;
    out.fill(ratioSum, start, end);
  }
  return total + min + max + outside;
}

/** The least a scalar loop can do: one read of each input, one write, per token. */
export function streamingPass(step: FlatStep, out: Float32Array): void {
  const { logpTrain, logpInfer } = step;
  for (let t = 0; t < logpTrain.length; t++) out[t] = logpTrain[t]! - logpInfer[t]!;
}
