// The importance-sampling options of docs/recipe.md §2.2 as weights: each replaces the token
// ratio r_t = exp(logp_train − logp_infer) of J (§2.1) by a weight w_t, giving
//   J_w = 1/N · Σ_i 1/|o_i| · Σ_t w_t · Â_i
//   truncate (TIS)     w_t = min(r_t, clipMax)
//   mask               w_t = r_t inside [maskLow, maskHigh], else 0 (the token is dropped)
//   level: sequence    w_t = s_i = exp(mean_t log r_t) (GSPO), truncated or masked per sequence
// Truncation applies to what masking keeps: a dropped token (or sequence) is never also counted
// as truncated. A backend's `importance_sampling` loss weighs token t by its own r_t, so J_w
// reaches it as the factor w_t / r_t on the advantage (§2.5); that factor is kept as a log,
// log w_t − log r_t, because s_i / r_t alone exceeds float32 once a token's log-ratio is 88.7
// nats below its sequence's mean (token-advantages.ts weightedTokenAdvantages applies it).
import { assertOffsets, assertSameLength, rolloutCount } from './ragged.ts';

/** The `importanceSampling` options of docs/recipe.md §2.2 (the run spec's field names). */
export interface IsOptions {
  level: 'token' | 'sequence';
  truncate: boolean;
  clipMax: number;
  mask: boolean;
  maskLow: number;
  maskHigh: number;
}

export interface IsWeights {
  /** w_t per generated token (T,), flat layout. */
  weights: Float64Array;
  /** log(w_t / r_t) per token (T,): 0 where w_t = r_t, −Infinity where the token is dropped. */
  logFactors: Float64Array;
  /** Tokens (token level) or sequences (sequence level) masked IS dropped; null without `mask`. */
  maskedFraction: number | null;
  /** Share of tokens or sequences, of all, whose kept ratio TIS clipped; null without `truncate`. */
  truncatedFraction: number | null;
}

/** Whether the options change w_t from r_t (the plain token-level J of §2.1 otherwise). */
export function needsIsWeights(options: IsOptions): boolean {
  return options.level === 'sequence' || options.truncate || options.mask;
}

interface Verdict {
  /** log w: the log-ratio itself, log clipMax when clipped, −Infinity when dropped. */
  logWeight: number;
  kept: boolean;
  clipped: boolean;
}

/** w for one log-ratio (a token's log r_t or a sequence's log s_i): mask first, then truncate
 * what is kept (docs/recipe.md §2.2). */
function weigh(options: IsOptions, logRatio: number, out: Verdict): Verdict {
  const ratio = Math.exp(logRatio);
  const kept = !options.mask || (ratio >= options.maskLow && ratio <= options.maskHigh);
  const clipped = kept && options.truncate && ratio > options.clipMax;
  out.kept = kept;
  out.clipped = clipped;
  out.logWeight = !kept ? -Infinity : clipped ? Math.log(options.clipMax) : logRatio;
  return out;
}

function fractions(options: IsOptions, dropped: number, clipped: number, count: number) {
  const of = Math.max(1, count);
  return {
    maskedFraction: options.mask ? dropped / of : null,
    truncatedFraction: options.truncate ? clipped / of : null,
  };
}

/** Token level (docs/recipe.md §2.2): w_t from each token's own ratio. */
export function tokenIsWeights(
  options: IsOptions,
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
): IsWeights {
  assertSameLength(logpTrain, logpInfer, 'logpTrain/logpInfer');
  const weights = new Float64Array(logpTrain.length);
  const logFactors = new Float64Array(logpTrain.length);
  const verdict: Verdict = { logWeight: 0, kept: true, clipped: false };
  let dropped = 0;
  let clipped = 0;
  for (let t = 0; t < weights.length; t++) {
    const logRatio = logpTrain[t]! - logpInfer[t]!;
    weigh(options, logRatio, verdict);
    weights[t] = Math.exp(verdict.logWeight);
    logFactors[t] = verdict.logWeight - logRatio; // exactly 0 where w_t = r_t
    if (!verdict.kept) dropped++;
    if (verdict.clipped) clipped++;
  }
  return { weights, logFactors, ...fractions(options, dropped, clipped, weights.length) };
}

/** Sequence level (docs/recipe.md §2.2, GSPO): every token of rollout i weighs s_i's verdict. */
export function sequenceIsWeights(
  options: IsOptions,
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  offsets: Int32Array,
): IsWeights {
  assertSameLength(logpTrain, logpInfer, 'logpTrain/logpInfer');
  assertOffsets(offsets, logpTrain.length);
  const weights = new Float64Array(logpTrain.length);
  const logFactors = new Float64Array(logpTrain.length);
  const verdict: Verdict = { logWeight: 0, kept: true, clipped: false };
  let dropped = 0;
  let clipped = 0;
  const sequenceCount = rolloutCount(offsets);
  for (let i = 0; i < sequenceCount; i++) {
    const [start, end] = [offsets[i]!, offsets[i + 1]!];
    weigh(options, meanLogRatio(logpTrain, logpInfer, start, end), verdict); // log s_i
    weights.fill(Math.exp(verdict.logWeight), start, end);
    for (let t = start; t < end; t++)
      logFactors[t] = verdict.logWeight - (logpTrain[t]! - logpInfer[t]!);
    if (!verdict.kept) dropped++;
    if (verdict.clipped) clipped++;
  }
  return { weights, logFactors, ...fractions(options, dropped, clipped, sequenceCount) };
}

/** log s_i = mean_t log r_t over [start, end) (0 for a rollout with no tokens, as sequence-ratio.ts). */
function meanLogRatio(
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  start: number,
  end: number,
): number {
  let logRatioSum = 0;
  for (let t = start; t < end; t++) logRatioSum += logpTrain[t]! - logpInfer[t]!;
  return end > start ? logRatioSum / (end - start) : 0;
}

/** w_t of docs/recipe.md §2.2's options at the trainer's current logprobs. */
export function isWeights(
  options: IsOptions,
  logpTrain: ArrayLike<number>,
  logpInfer: ArrayLike<number>,
  offsets: Int32Array,
): IsWeights {
  assertOffsets(offsets, logpTrain.length);
  return options.level === 'sequence'
    ? sequenceIsWeights(options, logpTrain, logpInfer, offsets)
    : tokenIsWeights(options, logpTrain, logpInfer);
}

/** J_w = 1/N Σ_i Â_i · mean_t w_t (docs/recipe.md §2.2): J with w_t in place of r_t. */
export function weightedObjective(
  offsets: Int32Array,
  advantages: ArrayLike<number>,
  weights: ArrayLike<number>,
): number {
  assertOffsets(offsets, weights.length);
  const sequenceCount = rolloutCount(offsets);
  if (advantages.length !== sequenceCount) {
    throw new RangeError(`advantages: ${advantages.length} values for ${sequenceCount} rollouts`);
  }
  let objectiveSum = 0;
  for (let i = 0; i < sequenceCount; i++) {
    const start = offsets[i]!;
    const end = offsets[i + 1]!;
    if (end === start) continue;
    let weightSum = 0;
    for (let t = start; t < end; t++) weightSum += weights[t]!;
    objectiveSum += (advantages[i]! * weightSum) / (end - start);
  }
  return sequenceCount === 0 ? 0 : objectiveSum / sequenceCount;
}
