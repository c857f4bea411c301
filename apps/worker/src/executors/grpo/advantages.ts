// Step phase 5 (docs/recipe.md §2): group advantages Â_i -> per-token advantages for the trainer's
// `importance_sampling` loss, scaled for its declared reduction so that the backend loss is
// L = −J exactly (@anneal/rl tokenAdvantageScale: 'sum' -> Â_i/(N·|o_i|), 'mean_per_sequence'
// -> Â_i, the backend dividing by |o_i| and N), N = rollouts of the step, |o_i| = generated tokens.
//
// The backend's IS loss −r_t·A_t has gradient −r_t·A_t·∇logp_t: the plain token-level J of
// docs/recipe.md §2.1. The IS options of §2.2 replace r_t by a weight w_t (@anneal/rl
// isWeights: truncated, masked, sequence level). The loss cannot express these, so the executor
// first runs a gradient-free `forward` at the same weights to get r_t, then passes
// A_t·w_t/r_t: the backend's gradient −r_t·A_t·(w_t/r_t) is exactly −w_t·A_t·∇logp_t (exact for
// a deterministic trainer such as the embedded one). w_t/r_t is formed from its log in float64
// (@anneal/rl weightedTokenAdvantages), never stored on its own.
import type { LossReduction } from '@anneal/engines';
import { samplingLogprobs, type Rollout } from '@anneal/envs';
import type { GrpoSpec } from '@anneal/protocol';
import {
  createStepBuffers,
  perTokenAdvantages,
  weightedTokenAdvantages,
  type GroupScore,
  type StepBuffers,
} from '@anneal/rl';

export type IsOptions = GrpoSpec['importanceSampling'];

/** Generated tokens of a batch in the flat layout of @anneal/rl (rollout i owns
 * [offsets[i], offsets[i+1])), with where they sit in each rollout's token sequence. The arrays
 * are @anneal/rl's step buffers (createStepBuffers: WebAssembly memory), so the step math streams
 * them in place: `logpInfer` and `offsets` are filled here, `logpTrain` by the gather of the
 * trainer's logprobs, `advantages` (Â_i) by the caller. */
export interface GeneratedLayout extends StepBuffers {
  /** Per rollout: its runs of generated tokens (lossMask 1, one a turn) as [start, end) pairs of
   * indices into rollout.tokens, flat and in order. Every per-token copy between a rollout's
   * sequence and the flat layout is one `set` or `fill` a run (a position list per token was
   * 8 MiB and a loop of 2 M a step at the production shape, bench/overhead). */
  runs: Int32Array[];
}

/** Floats of the trainer datums' advantages and weights: every position of every rollout
 * (train-step.ts isData, in the layout's scratch). */
export const datumScratchFloats = (rollouts: readonly Rollout[]): number =>
  2 * rollouts.reduce((n, r) => n + r.tokens.length, 0);

export function generatedLayout(rollouts: readonly Rollout[]): GeneratedLayout {
  // each run found once (the prompt and tool output before it skipped by the typed array's own
  // indexOf), its logprobs copied with one `set`
  const runs = rollouts.map((r) => generatedRuns(r.lossMask));
  const counts = runs.map((list) => {
    let count = 0;
    for (let j = 0; j < list.length; j += 2) count += list[j + 1]! - list[j]!;
    return count;
  });
  const buffers = createStepBuffers(
    counts.reduce((n, c) => n + c, 0),
    rollouts.length,
    datumScratchFloats(rollouts),
  );
  const { offsets, logpInfer } = buffers;
  counts.forEach((count, i) => (offsets[i + 1] = offsets[i]! + count));
  rollouts.forEach((r, i) => {
    const logprobs = samplingLogprobs(r, 'the step layout');
    forEachRun(runs[i]!, offsets[i]!, (from, to, at) =>
      logpInfer.set(logprobs.subarray(from, to), at),
    );
  });
  return { ...buffers, runs };
}

/** Calls `run(from, to, at)` for each run [from, to) of a rollout in order, `at` being where
 * the run starts in the flat layout (the rollout's offset plus the runs before it). */
export function forEachRun(
  runs: Int32Array,
  offset: number,
  run: (from: number, to: number, at: number) => void,
): void {
  let at = offset;
  for (let j = 0; j < runs.length; j += 2) {
    const from = runs[j]!;
    const to = runs[j + 1]!;
    run(from, to, at);
    at += to - from;
  }
}

/** The index in its rollout's tokens of a rollout's k-th generated token. */
export function generatedPosition(runs: Int32Array, k: number): number {
  let before = 0;
  for (let j = 0; j < runs.length; j += 2) {
    const length = runs[j + 1]! - runs[j]!;
    if (k < before + length) return runs[j]! + (k - before);
    before += length;
  }
  throw new RangeError(`generated token ${k}: the rollout has ${before}`);
}

/** The runs of 1s in a loss mask (0 or 1 each) as [start, end) pairs, flat. */
function generatedRuns(mask: Uint8Array): Int32Array {
  if (mask[0] === 1) throw new RangeError('the first token of a rollout cannot be generated');
  const runs: number[] = [];
  let t = mask.indexOf(1);
  while (t >= 0) {
    const zero = mask.indexOf(0, t + 1);
    const end = zero < 0 ? mask.length : zero;
    runs.push(t, end);
    t = mask.indexOf(1, end);
  }
  return Int32Array.from(runs);
}

/** Â_i of every rollout, groups concatenated in order. */
export function flatAdvantages(scores: readonly GroupScore[]): Float64Array {
  return Float64Array.from(scores.flatMap((s) => [...s.advantage]));
}

/** A_t for the backend: Â_i scaled for the reduction, times w_t/r_t (as its log, @anneal/rl
 * IsWeights.logFactors) when IS options apply. */
export function backendTokenAdvantages(
  advantages: ArrayLike<number>,
  layout: Pick<GeneratedLayout, 'offsets' | 'tokenAdvantages'>,
  reduction: LossReduction,
  logFactors: Float64Array | null,
): Float32Array {
  const { offsets, tokenAdvantages: out } = layout;
  return logFactors === null
    ? perTokenAdvantages(advantages, offsets, reduction, out)
    : weightedTokenAdvantages(advantages, offsets, reduction, logFactors, out);
}
