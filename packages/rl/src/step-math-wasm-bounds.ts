// The accuracy contract of stepTokenMath's WebAssembly path (step-math-wasm.ts) as numbers: how far
// each metric may be from the scalar float64 reference (stepTokenMathScalar) for a given batch.
// Tests and bench/rl check the kernel against it. The kernel computes in float32 on float32 inputs:
//   - d = logp_train − logp_infer is rounded to float32 (|Δd| ≤ 2^-24 |d|; exact when the two
//     logprobs are within a factor 2): never more than rounding the inputs to float32 already does;
//   - r, r − 1 and k = r − 1 − d carry a few float32 ulps (r: 1.3 ulp; k: 4 ulp, 14 ulp where
//     0.35 < |d| < 1 and k is a small difference);
//   - sums run in float32 for 16 terms per lane, then in float64.
// Each sum's bound is 2^-24 × Σ_t (a multiple of |term_t| covering all three), with generous
// constants; measured errors are orders of magnitude below it (bench/rl: 100–10⁵×). Rollouts
// with a |d| beyond 80 or a non-finite d go through the scalar code and are exact.
import type { StepBatch, StepTokenStats } from './step-math.ts';

const UNIT_ROUNDOFF = 2 ** -24; // float32
const EXP_RANGE = 80; // as in step-math-wasm.ts

/** Largest |WASM − reference| allowed per metric; `reference` is stepTokenMathScalar's result. */
export function wasmStepErrorBounds(
  batch: StepBatch,
  reference: StepTokenStats,
): Record<keyof StepTokenStats, number> {
  const { logpTrain, logpInfer, offsets, advantages } = batch;
  let ratio = 0; // Σ_t bound on r_t
  let logRatio = 0;
  let kl = 0;
  let objective = 0;
  let maxAbsD = 0;
  let ambiguous = 0; // tokens whose rounded d may fall on the other side of |d| = ln 2
  for (let i = 0; i + 1 < offsets.length; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    let inRange = true;
    for (let t = start; t < end && inRange; t++)
      inRange = Math.abs(Math.fround(logpTrain[t]! - logpInfer[t]!)) <= EXP_RANGE;
    if (!inRange) continue; // the scalar reference's own code ran: exact
    let rolloutRatio = 0;
    for (let t = start; t < end; t++) {
      const d = logpTrain[t]! - logpInfer[t]!;
      const r = Math.exp(d);
      const absD = Math.abs(d);
      rolloutRatio += 32 * Math.abs(r - 1) + 2 * r * absD;
      logRatio += 20 * absD;
      kl += 32 * (Math.expm1(d) - d) + 8 * r * Number(absD > 0.34) + 2 * Math.abs((r - 1) * d);
      maxAbsD = Math.max(maxAbsD, absD);
      if (Math.fround(d) !== d && Math.abs(absD - Math.LN2) <= 4 * UNIT_ROUNDOFF * absD)
        ambiguous++;
    }
    ratio += rolloutRatio;
    if (end > start) objective += (Math.abs(advantages[i]!) * rolloutRatio) / (end - start);
  }
  const tokens = logpTrain.length;
  const rollouts = Math.max(1, offsets.length - 1);
  const extreme = 2 * UNIT_ROUNDOFF * maxAbsD; // min/max: Math.exp of the float32 extreme d
  return {
    tokens: 0,
    k1: (UNIT_ROUNDOFF * logRatio) / tokens,
    k3: (UNIT_ROUNDOFF * kl) / tokens,
    ratioMean: (UNIT_ROUNDOFF * ratio) / tokens,
    ratioMin: extreme * Math.abs(reference.ratioMin),
    ratioMax: extreme * Math.abs(reference.ratioMax),
    ratioFractionOutside: ambiguous / tokens,
    objective: (UNIT_ROUNDOFF * objective) / rollouts,
  };
}
