// stepTokenMath: docs/recipe.md §2's per-token step math (IS ratios, KL k1/k3, ratio statistics and
// J) through the WebAssembly SIMD kernel (wasm/step-kernel.wat) where the runtime has it, else
// through the scalar reference stepTokenMathScalar (step-math.ts).
//
// The kernel works on "pieces": whole rollouts when the batch lives in kernel memory
// (createStepBuffers: zero-copy), or slices of at most STAGE_TOKENS tokens copied through a small
// staging area otherwise. Per piece it returns Σ d, Σ k3-terms, min d, max d, the count outside
// [0.5, 2] and Σ r in two parts (r − 1 near 1, r itself elsewhere); this file adds the pieces of
// each rollout up and combines rollouts exactly as the reference does. A rollout with any log-ratio outside [−80, 80], infinite or NaN is recomputed
// with the reference's own scanRollout, so those cases give the reference's results exactly.
// Accuracy of the rest: float32 arithmetic on float32 inputs (see the README, "WebAssembly path").
import {
  checkStepInputs,
  scanRollout,
  stepTokenMathScalar,
  type RolloutSums,
  type StepBatch,
  type StepTokenStats,
} from './step-math.ts';
import {
  PIECES_PER_CALL,
  STAGE_TOKENS,
  SUM_FIELDS,
  stagingKernelOf,
  zeroCopyKernel,
  type StageArrays,
  type StepKernel,
} from './step-wasm-kernel.ts';

/** |d| beyond which the kernel's float32 exp is not used (e^±80 stays a normal float32). */
const EXP_RANGE = 80;

/** Sums of the rollout in progress (its pieces so far). */
interface OpenRollout {
  em1: number; // Σ (r − 1) over tokens with |d| < ln 2 / 2
  far: number; // Σ r over the others
  farCount: number; // how many others
  d: number; // Σ logRatio
  k: number; // Σ (r − 1 − logRatio)
  minD: number;
  maxD: number;
  outside: number;
}

/** Whole-batch accumulators, in the reference's terms. */
interface Totals {
  ratio: number; // Σ r
  logRatio: number; // Σ logRatio
  kl: number; // Σ (r − 1 − logRatio)
  objective: number; // Σ_i Â_i mean_t r
  minD: number; // over rollouts the kernel handled
  maxD: number;
  outside: number;
  scalar: RolloutSums; // rollouts recomputed by scanRollout (running min/max/outside)
}

const emptyRollout = (): OpenRollout => ({
  em1: 0,
  far: 0,
  farCount: 0,
  d: 0,
  k: 0,
  minD: Infinity,
  maxD: -Infinity,
  outside: 0,
});

/** Add piece p's kernel results to the open rollout. */
function addPiece(open: OpenRollout, sums: Float64Array, p: number): void {
  const at = p * SUM_FIELDS;
  open.em1 += sums[at]!;
  open.d += sums[at + 1]!;
  open.k += sums[at + 2]!;
  open.minD = Math.min(open.minD, sums[at + 3]!);
  open.maxD = Math.max(open.maxD, sums[at + 4]!);
  open.outside += sums[at + 5]!;
  open.far += sums[at + 6]!;
  open.farCount += sums[at + 7]!;
}

/** Fold rollout i (all of its pieces in `open`) into the totals, as the reference does. */
function closeRollout(batch: StepBatch, i: number, open: OpenRollout, totals: Totals): void {
  const start = batch.offsets[i]!;
  const end = batch.offsets[i + 1]!;
  const length = end - start;
  const inRange =
    length === 0 || (open.minD >= -EXP_RANGE && open.maxD <= EXP_RANGE && Number.isFinite(open.d));
  let ratioSum: number;
  let logRatioSum: number;
  if (inRange) {
    ratioSum = length - open.farCount + open.em1 + open.far;
    logRatioSum = open.d;
    totals.kl += open.k;
    totals.minD = Math.min(totals.minD, open.minD);
    totals.maxD = Math.max(totals.maxD, open.maxD);
    totals.outside += open.outside;
  } else {
    scanRollout(batch, start, end, totals.scalar);
    ratioSum = totals.scalar.ratioSum;
    logRatioSum = totals.scalar.logRatioSum;
    totals.kl += ratioSum - length - logRatioSum;
  }
  totals.ratio += ratioSum;
  totals.logRatio += logRatioSum;
  if (length > 0) totals.objective += (batch.advantages[i]! * ratioSum) / length;
  Object.assign(open, emptyRollout());
}

/** The metrics from the totals; the same formulas (and NaN rules) as stepTokenMathScalar. */
function metricsOf(tokens: number, sequenceCount: number, totals: Totals): StepTokenStats {
  const kernelMin = totals.minD === Infinity ? Infinity : Math.exp(totals.minD);
  const kernelMax = totals.maxD === -Infinity ? -Infinity : Math.exp(totals.maxD);
  return {
    tokens,
    k1: -totals.logRatio / tokens,
    k3: tokens === 0 ? NaN : Math.max(0, totals.kl / tokens),
    ratioMean: totals.ratio / tokens,
    ratioMin: tokens === 0 ? NaN : Math.min(kernelMin, totals.scalar.min),
    ratioMax: tokens === 0 ? NaN : Math.max(kernelMax, totals.scalar.max),
    ratioFractionOutside: (totals.outside + totals.scalar.outside) / tokens,
    objective: sequenceCount === 0 ? 0 : totals.objective / sequenceCount,
  };
}

/** Where the kernel runs: on the batch's own memory (stage null) or through a staging area. */
interface KernelRun {
  kernel: StepKernel;
  stage: StageArrays | null;
}

function kernelStep(
  batch: StepBatch,
  { kernel, stage }: KernelRun,
  stageTokens: number,
): StepTokenStats {
  const sequenceCount = checkStepInputs(batch);
  const { offsets, logpTrain, logpInfer } = batch;
  const { bounds, sums } = kernel;
  const sliceLimit = stage === null ? Infinity : stageTokens;
  const totals: Totals = {
    ...{ ratio: 0, logRatio: 0, kl: 0, objective: 0, minD: Infinity, maxD: -Infinity, outside: 0 },
    scalar: { ratioSum: 0, logRatioSum: 0, min: Infinity, max: -Infinity, outside: 0 },
  };
  const open = emptyRollout();
  let rollout = 0; // first rollout not yet closed
  let token = 0; // first token not yet scanned
  while (rollout < sequenceCount) {
    // plan one call: consecutive pieces from `token`, at most sliceLimit tokens in all
    const base = token;
    let count = 0;
    let planned = rollout;
    bounds[0] = 0;
    while (count < PIECES_PER_CALL && planned < sequenceCount) {
      const rolloutEnd = offsets[planned + 1]!;
      const pieceEnd = Math.min(rolloutEnd, base + sliceLimit);
      if (pieceEnd === token && rolloutEnd > token) break; // the slice is full
      bounds[++count] = pieceEnd - base;
      token = pieceEnd;
      if (token === rolloutEnd) planned++;
    }
    if (stage === null) {
      kernel.scan(
        logpTrain.byteOffset + 4 * base,
        logpInfer.byteOffset + 4 * base,
        bounds.byteOffset,
        sums.byteOffset,
        count,
      );
    } else {
      stage.logpTrain.set(logpTrain.subarray(base, token));
      stage.logpInfer.set(logpInfer.subarray(base, token));
      kernel.scan(
        stage.logpTrain.byteOffset,
        stage.logpInfer.byteOffset,
        bounds.byteOffset,
        sums.byteOffset,
        count,
      );
    }
    for (let p = 0; p < count; p++) {
      addPiece(open, sums, p);
      if (base + bounds[p + 1]! === offsets[rollout + 1]!)
        closeRollout(batch, rollout++, open, totals);
    }
  }
  return metricsOf(logpTrain.length, sequenceCount, totals);
}

/**
 * docs/recipe.md §2 step math for a batch in the flat layout (ragged.ts): IS ratios, train–inference KL
 * (k1, k3), ratio statistics and J. Runs the WebAssembly SIMD kernel where available — in place
 * when the logprob arrays come from createStepBuffers (stepRunsInPlace), staged through a small
 * buffer otherwise — and the scalar reference (stepTokenMathScalar) elsewhere.
 */
export function stepTokenMath(batch: StepBatch): StepTokenStats {
  const run = kernelRunFor(batch);
  return run === null ? stepTokenMathScalar(batch) : kernelStep(batch, run, STAGE_TOKENS);
}

/** Whether stepTokenMath streams this batch in place (its logprobs live in kernel memory). */
export function stepRunsInPlace(batch: Pick<StepBatch, 'logpTrain' | 'logpInfer'>): boolean {
  return zeroCopyKernel([batch.logpTrain, batch.logpInfer]) !== undefined;
}

/**
 * stepTokenMath forced onto the WebAssembly kernel (throws where WebAssembly SIMD is missing).
 * `stageTokens` (≤ STAGE_TOKENS) sizes the staging slices; smaller values exist for tests.
 */
export function stepTokenMathWasm(
  batch: StepBatch,
  stageTokens: number = STAGE_TOKENS,
): StepTokenStats {
  if (!(Number.isInteger(stageTokens) && stageTokens >= 1 && stageTokens <= STAGE_TOKENS))
    throw new RangeError(`stageTokens: must be an integer in [1, ${STAGE_TOKENS}]`);
  const run = kernelRunFor(batch);
  if (run === null) throw new Error('stepTokenMathWasm: this runtime has no WebAssembly SIMD');
  return kernelStep(batch, run, stageTokens);
}

/** The kernel for a batch: its own memory's (zero-copy), the staging one, or null (no SIMD). */
function kernelRunFor(batch: StepBatch): KernelRun | null {
  const { logpTrain, logpInfer } = batch;
  const own = zeroCopyKernel([logpTrain, logpInfer]);
  if (own !== undefined) return { kernel: own, stage: null };
  return stagingKernelOf();
}
