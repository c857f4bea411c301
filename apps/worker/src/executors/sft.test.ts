import { describe, expect, it } from 'vitest';
import { meanCrossEntropy, sftBatch } from './sft.ts';

describe('sftBatch (docs/recipe.md §1: loss on completion tokens only)', () => {
  const examples = [
    // prompt [1, 2], completion [3, 4], tool output [5], completion [6]
    { id: 'a', tokens: [1, 2, 3, 4, 5, 6], lossMask: [0, 0, 1, 1, 0, 1] },
    { id: 'b', tokens: [1, 7, 8], lossMask: [0, 1, 1] },
  ];

  it('weights completion targets 1/total for a summing trainer, 0 elsewhere', () => {
    const batch = sftBatch(examples, 100, 'sum');
    expect(batch.trainedTokens).toBe(5);
    expect([...batch.data[0]!.modelInput]).toEqual([1, 2, 3, 4, 5]);
    expect([...batch.data[0]!.lossFnInputs['target_tokens']!]).toEqual([2, 3, 4, 5, 6]);
    expect([...batch.data[0]!.lossFnInputs['weights']!]).toEqual(
      [0, 0.2, 0.2, 0, 0.2].map(Math.fround),
    );
    expect([...batch.data[1]!.lossFnInputs['weights']!]).toEqual([0.2, 0.2].map(Math.fround));
    expect(batch.inputTokens).toBe(7);
  });

  it('scales by the sequence for a mean-per-sequence trainer and cuts long sequences', () => {
    const batch = sftBatch(examples, 4, 'mean_per_sequence');
    // a is cut to [1, 2, 3, 4]: 2 trained targets; b has 2; total 4
    expect([...batch.data[0]!.lossFnInputs['weights']!]).toEqual([0, 0.5, 0.5]);
    expect([...batch.data[1]!.lossFnInputs['weights']!]).toEqual([0.5, 0.5]);
  });

  it('mean cross-entropy covers masked-in targets only', () => {
    const masks = [Float32Array.of(0, 1, 1), Float32Array.of(1)];
    const logprobs = [Float32Array.of(-9, -1, -2), Float32Array.of(-3)];
    expect(meanCrossEntropy(logprobs, masks)).toBeCloseTo(2, 6);
  });
});
