// Paired significance tests for two checkpoints answering the same questions (docs/evaluation.md
// "Paired tests"), as pure functions: the exact McNemar test of an accuracy difference and the
// exact Wilcoxon signed-rank test of a per-question count difference (tool calls, failed calls,
// tokens, preference scores). Both are exact (no normal approximation), two-sided.

/** log C(n, k) via log-gamma-free summation (exact enough for n ≤ a few thousand). */
function logChoose(n: number, k: number): number {
  let s = 0;
  for (let i = 1; i <= k; i++) s += Math.log(n - k + i) - Math.log(i);
  return s;
}

export interface McNemarResult {
  /** Questions the first checkpoint got right and the second wrong. */
  onlyFirst: number;
  /** Questions the second got right and the first wrong. */
  onlySecond: number;
  /** Two-sided exact p-value: 2·P(X ≤ min(b, c)), X ~ Binomial(b + c, ½), capped at 1. */
  p: number;
}

/** Exact McNemar test on paired right/wrong outcomes (`first[i]`, `second[i]` = question i). */
export function mcnemarExact(first: readonly boolean[], second: readonly boolean[]): McNemarResult {
  if (first.length !== second.length) {
    throw new RangeError(`mcnemarExact: ${first.length} answers against ${second.length}`);
  }
  let b = 0;
  let c = 0;
  first.forEach((a, i) => {
    if (a && !second[i]) b += 1;
    if (!a && second[i]) c += 1;
  });
  return { onlyFirst: b, onlySecond: c, p: mcnemarP(b, c) };
}

/** The exact McNemar p-value of `b` and `c` discordant pairs. */
export function mcnemarP(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  let tail = 0;
  for (let i = 0; i <= k; i++) tail += Math.exp(logChoose(n, i) - n * Math.LN2);
  return Math.min(1, 2 * tail);
}

export interface SignedRankResult {
  /** Pairs with a non-zero difference (zeros are dropped, Wilcoxon's convention). */
  n: number;
  /** Sum of the ranks of |d| over the positive differences (second − first > 0). */
  wPlus: number;
  /** Mean difference (second − first) over all pairs, zeros included. */
  meanDifference: number;
  /** Two-sided exact p-value: the sign-flip distribution of W+ given the ranks (midranks for
   * ties, so the test stays exact conditional on the tie pattern). */
  p: number;
}

/** Exact Wilcoxon signed-rank test of paired values (`second[i] − first[i]`). */
export function signedRankExact(
  first: readonly number[],
  second: readonly number[],
): SignedRankResult {
  if (first.length !== second.length) {
    throw new RangeError(`signedRankExact: ${first.length} values against ${second.length}`);
  }
  const all = first.map((a, i) => second[i]! - a);
  if (all.some((d) => !Number.isFinite(d)))
    throw new RangeError('signedRankExact: non-finite value');
  const meanDifference = all.length ? all.reduce((s, d) => s + d, 0) / all.length : 0;
  const diffs = all.filter((d) => d !== 0);
  const n = diffs.length;
  if (n === 0) return { n, wPlus: 0, meanDifference, p: 1 };
  // Doubled midranks are integers: 2·rank of a tie group spanning positions lo..hi is lo + hi + 2.
  const order = diffs.map((d, i) => [Math.abs(d), i] as const).sort((x, y) => x[0] - y[0]);
  const twice = new Array<number>(n);
  for (let lo = 0; lo < n;) {
    let hi = lo;
    while (hi + 1 < n && order[hi + 1]![0] === order[lo]![0]) hi += 1;
    for (let j = lo; j <= hi; j++) twice[order[j]![1]] = lo + hi + 2;
    lo = hi + 1;
  }
  const total = twice.reduce((s, r) => s + r, 0);
  // counts[s] = number of sign patterns whose positive doubled ranks sum to s, as probabilities.
  let dist = new Float64Array(total + 1);
  dist[0] = 1;
  for (const r of twice) {
    const next = new Float64Array(total + 1);
    for (let s = 0; s <= total - r; s++) {
      const v = dist[s]!;
      if (v === 0) continue;
      next[s] = next[s]! + v / 2;
      next[s + r] = next[s + r]! + v / 2;
    }
    dist = next;
  }
  const w2 = diffs.reduce((s, d, i) => (d > 0 ? s + twice[i]! : s), 0);
  let lower = 0;
  let upper = 0;
  for (let s = 0; s <= total; s++) {
    if (s <= w2) lower += dist[s]!;
    if (s >= w2) upper += dist[s]!;
  }
  return { n, wPlus: w2 / 2, meanDifference, p: Math.min(1, 2 * Math.min(lower, upper)) };
}
