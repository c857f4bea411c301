// Next-token sampling from one row of logits: temperature, then top-p (nucleus) truncation,
// then a draw from the renormalised distribution. The returned logprob is the sampled token's
// log-probability under that processed distribution: vLLM's `processed_logprobs` semantics
// (docs/engines.md), which is what μ_infer in the IS ratio of docs/recipe.md §2 must be.
import type { Rng } from './rng.ts';

export interface SampledToken {
  token: number;
  logprob: number;
}

export interface SamplingParams {
  /** 0 = greedy (argmax; logprob is the plain log-softmax, no temperature or top-p). */
  temperature: number;
  /** Keep the smallest set of most likely tokens whose probability reaches topP (1 = all). */
  topP: number;
}

export function validateSamplingParams(p: SamplingParams): void {
  if (!(Number.isFinite(p.temperature) && p.temperature >= 0)) {
    throw new RangeError(`temperature must be a finite number >= 0, got ${p.temperature}`);
  }
  if (!(p.topP > 0 && p.topP <= 1)) throw new RangeError(`topP must be in (0, 1], got ${p.topP}`);
}

/**
 * Samples from logits[offset … offset+V). `scratch` holds ≥ 2V float64s and `order` ≥ V ints
 * (reused across calls: no allocation per token).
 */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  V: number,
  params: SamplingParams,
  rng: Rng,
  scratch: Float64Array,
  order: Int32Array,
): SampledToken {
  const greedy = params.temperature === 0;
  const invTemperature = greedy ? 1 : 1 / params.temperature;
  let max = -Infinity;
  let argmax = 0;
  for (let v = 0; v < V; v++) {
    const z = logits[offset + v]! * invTemperature;
    scratch[v] = z;
    if (z > max) {
      max = z;
      argmax = v;
    }
  }
  let total = 0; // Σ exp(z − max) over the whole vocabulary
  for (let v = 0; v < V; v++) {
    const e = Math.exp(scratch[v]! - max);
    scratch[V + v] = e;
    total += e;
  }
  if (greedy) return { token: argmax, logprob: -Math.log(total) }; // z_argmax − max = 0
  let kept = V; // tokens order[0 … kept) form the nucleus
  let keptMass = total;
  for (let v = 0; v < V; v++) order[v] = v;
  if (params.topP < 1) {
    const sorted = order.subarray(0, V).sort((a, b) => scratch[V + b]! - scratch[V + a]! || a - b);
    keptMass = 0;
    kept = 0;
    const target = params.topP * total;
    while (kept < V && keptMass < target) keptMass += scratch[V + sorted[kept++]!]!;
  }
  let u = rng() * keptMass;
  let token = order[kept - 1]!;
  for (let i = 0; i < kept; i++) {
    const candidate = order[i]!;
    u -= scratch[V + candidate]!;
    if (u < 0) {
      token = candidate;
      break;
    }
  }
  return { token, logprob: scratch[token]! - max - Math.log(keptMass) };
}
