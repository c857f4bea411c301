// The fake trainer's sampler: deterministic tokens and logprobs from (prompt, weights, seed,
// sample index), in the shape of SkyRL's SampleOutput / the tinker SDK's SampleResponse
// (src/tinker/types/sample_response.py, sampled_sequence.py: {tokens, logprobs, stop_reason}).
import type * as Wire from '../../src/tinker/wire.ts';

export interface FakeSamplerWeights {
  /** Optimiser steps of the exported weights (0 = base model). */
  steps: number;
}

/** Sampled token `i` of sample `k`: a function of the prompt, weights, seed and k. */
export function fakeSampledToken(
  prompt: readonly number[],
  weights: FakeSamplerWeights,
  seed: number,
  k: number,
  i: number,
): number {
  const base = prompt.reduce((a, b) => a + b, 0) + 7 * weights.steps + 13 * seed + 31 * k;
  return 2 + ((base + 5 * i) % 60);
}

export function fakeSampledLogprob(i: number, weights: FakeSamplerWeights): number {
  return -(1 + (i % 3)) / (10 * (1 + weights.steps));
}

export function fakeSample(
  request: Pick<Wire.AsampleRequest, 'num_samples' | 'prompt' | 'sampling_params'>,
  weights: FakeSamplerWeights,
): Wire.SampleResponse {
  const prompt = request.prompt.chunks.flatMap((c) => c.tokens);
  const params = request.sampling_params;
  const stop = new Set(params.stop ?? []);
  const seed = params.seed ?? 0;
  const sequences: Wire.SampledSequenceWire[] = [];
  for (let k = 0; k < request.num_samples; k += 1) {
    const tokens: number[] = [];
    const logprobs: number[] = [];
    let reason: 'length' | 'stop' = 'length';
    for (let i = 0; i < params.max_tokens; i += 1) {
      const token = fakeSampledToken(prompt, weights, seed, k, i);
      tokens.push(token);
      logprobs.push(fakeSampledLogprob(i, weights));
      if (stop.has(token)) {
        reason = 'stop';
        break;
      }
    }
    sequences.push({ tokens, logprobs, stop_reason: reason });
  }
  return { sequences, prompt_logprobs: null };
}
