// Sampled sequences with plain arrays: the vLLM client reads ids and logprobs into typed arrays,
// other paths (the generic parser, older servers) return arrays, and deep equality tells the two
// apart. Tests compare what was sampled, not how it is held.
import type { SampledSequence } from '../src/types.ts';

export interface PlainSequence {
  tokens: number[];
  logprobs: number[] | null;
  finishReason: SampledSequence['finishReason'];
}

export function plainSequences(sequences: readonly SampledSequence[]): PlainSequence[] {
  return sequences.map((s) => ({
    tokens: Array.from(s.tokens),
    logprobs: s.logprobs === null ? null : Array.from(s.logprobs),
    finishReason: s.finishReason,
  }));
}
