// bench/overhead vLLM reader: one step's policy replies (32 × 16 choices × 4,096 tokens, with
// logprobs) as vLLM writes them — ids up to 151,936, float32 logprobs as Python's repr writes
// them (17 digits, `e-05` below 1e-4: the fake vLLM's fixtures) — read by the client's field
// extractor (`extractCompletion`) and, as the same-run baseline, by JSON.parse alone (which
// builds every per-token object the extractor only checks). Interleaved, 7 repetitions of the
// step each, median ms a step and µs a reply; checks the extractor took its fast path for
// every reply. `npm run bench:vllm-reader -w bench` (about 20 s).
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { completionResponseJson, extractCompletion, fakeLogprob } from '@anneal/engines/testing';

const REPLIES = 32;
const CHOICES = 16;
const TOKENS = 4096;
const REPETITIONS = 7;

const encoder = new TextEncoder();
const replies = Array.from({ length: 4 }, (_, seed) => {
  const choices = Array.from({ length: CHOICES }, (_, c) => {
    const tokens = Array.from(
      { length: TOKENS },
      (_, t) => (7919 * (c + 16 * seed) + 104_729 * t) % 151_936,
    );
    return { tokens, logprobs: tokens.map(fakeLogprob), finishReason: 'length' as const };
  });
  const prompt = Array.from({ length: 200 }, (_, i) => 1000 + i);
  return encoder.encode(completionResponseJson('new', 'qwen3-base', prompt, choices));
});
const decoder = new TextDecoder();

type Way = 'extractor' | 'JSON.parse';
const read: Record<Way, (bytes: Uint8Array) => void> = {
  extractor: (bytes) => {
    if (extractCompletion(bytes, CHOICES) === undefined) {
      throw new Error('a reply took the generic path');
    }
  },
  'JSON.parse': (bytes) => {
    JSON.parse(decoder.decode(bytes));
  },
};

const times: Record<Way, number[]> = { extractor: [], 'JSON.parse': [] };
const loadBefore = loadavg();
for (let r = 0; r <= REPETITIONS; r += 1) {
  for (const way of ['extractor', 'JSON.parse'] as const) {
    const start = performance.now();
    for (let i = 0; i < REPLIES; i += 1) read[way](replies[i % replies.length]!);
    if (r > 0) times[way].push(performance.now() - start); // repetition 0 warms up
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
const bytes = replies[0]!.length;
console.log(
  `vLLM reader: ${REPLIES} replies × ${CHOICES} × ${TOKENS} tokens a step, ${(bytes / CHOICES / TOKENS).toFixed(1)} bytes a token; median of ${REPETITIONS}; load ${load(loadBefore)} -> ${load(loadavg())}`,
);
for (const way of ['extractor', 'JSON.parse'] as const) {
  const ms = median(times[way]);
  console.log(
    `  ${way.padEnd(10)} ${ms.toFixed(0).padStart(6)} ms a step  ${((1000 * ms) / REPLIES).toFixed(0).padStart(6)} µs a reply  ${((1e6 * ms) / (REPLIES * CHOICES * TOKENS)).toFixed(0)} ns a token`,
  );
}
console.log(
  `  extractor: ${(median(times['JSON.parse']) / median(times.extractor)).toFixed(2)}× JSON.parse's speed`,
);
