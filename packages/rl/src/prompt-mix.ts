// Seeded weighted prompt mix (docs/recipe.md §3, "Prompt mix": 90 % verifiable QA, 10 % rubric,
// configurable). Systematic sampling: one uniform offset u, then n evenly spaced points
// (u + k) / n on the cumulative weights. Each source's count is floor or ceil of n · w_j and its
// expectation is exactly n · w_j; the order is then shuffled (Fisher–Yates) with the same RNG.
import type { Rng } from './rng.ts';

function normalisedCumulative(weights: ArrayLike<number>): Float64Array {
  if (weights.length === 0) throw new RangeError('weights: need at least one source');
  let total = 0;
  for (let j = 0; j < weights.length; j++) {
    const weight = weights[j]!;
    if (!(Number.isFinite(weight) && weight >= 0))
      throw new RangeError(`weights[${j}]: must be finite and >= 0`);
    total += weight;
  }
  if (!(total > 0)) throw new RangeError('weights: must not all be 0');
  const cumulative = new Float64Array(weights.length);
  let running = 0;
  for (let j = 0; j < weights.length; j++) {
    running += weights[j]!;
    cumulative[j] = running / total;
  }
  cumulative[weights.length - 1] = 1; // no rounding gap at the top
  return cumulative;
}

/** How many of n prompts come from each source (counts within 1 of n · w_j, sum n). */
export function allocatePromptMix(weights: ArrayLike<number>, n: number, rng: Rng): Int32Array {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`n: must be an integer >= 0, got ${n}`);
  const cumulative = normalisedCumulative(weights);
  const counts = new Int32Array(weights.length);
  const offset = rng.next();
  let source = 0;
  for (let k = 0; k < n; k++) {
    const point = (offset + k) / n;
    while (point >= cumulative[source]! && source < cumulative.length - 1) source++;
    counts[source]!++;
  }
  return counts;
}

/** The source index of each of n prompts, in a seeded random order. */
export function samplePromptMix(weights: ArrayLike<number>, n: number, rng: Rng): Int32Array {
  const counts = allocatePromptMix(weights, n, rng);
  const sources = new Int32Array(n);
  let slot = 0;
  for (let j = 0; j < counts.length; j++) {
    sources.fill(j, slot, slot + counts[j]!);
    slot += counts[j]!;
  }
  for (let k = n - 1; k > 0; k--) {
    const swapWith = rng.int(0, k);
    const held = sources[k]!;
    sources[k] = sources[swapWith]!;
    sources[swapWith] = held;
  }
  return sources;
}
