import { describe, expect, it } from 'vitest';
import { createRng } from './rng.ts';
import { sampleToken, validateSamplingParams } from './sampling.ts';

const V = 5;
const logits = Float32Array.of(2, 1, 0.5, 0, -1);

/** The processed distribution by hand: softmax(logits / T), then the top-p nucleus, renormalised. */
function processed(temperature: number, topP: number): number[] {
  const e = Array.from(logits, (z) => Math.exp(z / temperature));
  const total = e.reduce((a, b) => a + b, 0);
  const p = e.map((x) => x / total);
  const order = p.map((_, i) => i).sort((a, b) => p[b]! - p[a]!);
  const keep = new Set<number>();
  let mass = 0;
  for (const i of order) {
    if (mass >= topP) break;
    keep.add(i);
    mass += p[i]!;
  }
  return p.map((x, i) => (keep.has(i) ? x / mass : 0));
}

function draw(temperature: number, topP: number, n: number) {
  const rng = createRng(42);
  const scratch = new Float64Array(2 * V);
  const order = new Int32Array(V);
  const counts = new Array<number>(V).fill(0);
  const logprobOf = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const s = sampleToken(logits, 0, V, { temperature, topP }, rng, scratch, order);
    counts[s.token]!++;
    logprobOf.set(s.token, s.logprob);
  }
  return { freq: counts.map((c) => c / n), logprobOf };
}

describe('sampleToken: processed_logprobs semantics', () => {
  for (const [temperature, topP] of [
    [1, 1],
    [0.5, 1],
    [1.5, 0.8],
    [0.7, 0.6],
  ] as const) {
    it(`T=${temperature}, top-p=${topP}: logprob = log p_processed(token); draws follow p_processed`, () => {
      const expected = processed(temperature, topP);
      const { freq, logprobOf } = draw(temperature, topP, 20_000);
      for (let v = 0; v < V; v++) {
        if (expected[v] === 0)
          expect(freq[v]).toBe(0); // outside the nucleus: never sampled
        else {
          expect(logprobOf.get(v)).toBeCloseTo(Math.log(expected[v]!), 6);
          expect(Math.abs(freq[v]! - expected[v]!)).toBeLessThan(0.015);
        }
      }
    });
  }

  it('temperature 0 is greedy with the plain log-softmax as logprob', () => {
    const { freq, logprobOf } = draw(0, 0.5, 10);
    expect(freq[0]).toBe(1);
    expect(logprobOf.get(0)).toBeCloseTo(Math.log(processed(1, 1)[0]!), 6);
  });

  it('rejects invalid parameters', () => {
    expect(() => validateSamplingParams({ temperature: -1, topP: 1 })).toThrow(/temperature/);
    expect(() => validateSamplingParams({ temperature: 1, topP: 0 })).toThrow(/topP/);
  });
});
