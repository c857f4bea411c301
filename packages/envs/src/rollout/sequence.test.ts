import { describe, expect, it } from 'vitest';
import { RolloutSequence } from './sequence.ts';

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
const sample = (tokens: number[], logprob = -0.5) => ({
  tokens,
  logprobs: tokens.map((_, i) => logprob - i / 1000),
  finishReason: 'stop' as const,
});

describe('RolloutSequence', () => {
  it('keeps ids, mask and logprobs aligned across appends that outgrow its stores', () => {
    const seq = new RolloutSequence([1, 2, 3]);
    const expected = { tokens: [1, 2, 3], mask: [0, 0, 0], logprobs: [0, 0, 0] };
    for (let turn = 0; turn < 6; turn++) {
      const generated = sample(range(100 * (turn + 1), 37 * (turn + 1)), -turn);
      seq.appendGenerated(generated);
      expected.tokens.push(...generated.tokens);
      expected.mask.push(...generated.tokens.map(() => 1));
      expected.logprobs.push(...generated.logprobs);
      const tool = range(9000 + turn, 50);
      seq.appendEnvironment(tool);
      expected.tokens.push(...tool);
      expected.mask.push(...tool.map(() => 0));
      expected.logprobs.push(...tool.map(() => 0));
    }
    expect(seq.length).toBe(expected.tokens.length);
    expect(Array.from(seq.tokens)).toEqual(expected.tokens);
    expect(Array.from(seq.lossMask)).toEqual(expected.mask);
    // kept as float32, as the sampler computed them
    expect(Array.from(seq.logprobs!)).toEqual(expected.logprobs.map(Math.fround));
    expect(seq.generatedCount()).toBe(expected.mask.filter((m) => m === 1).length);
  });

  it('a view taken before an append does not change (the prompt of a request in flight)', () => {
    const seq = new RolloutSequence([7, 8]);
    seq.appendGenerated(sample([9, 10]));
    const prompt = seq.tokens;
    seq.appendEnvironment([11, 12, 13]);
    seq.appendGenerated(sample(range(20, 200))); // grows past the first store
    expect(Array.from(prompt)).toEqual([7, 8, 9, 10]);
    expect(Array.from(seq.tokens.subarray(0, 7))).toEqual([7, 8, 9, 10, 11, 12, 13]);
  });

  it('compact keeps the content and drops unused capacity', () => {
    const seq = new RolloutSequence(range(1, 40));
    seq.appendGenerated(sample(range(100, 30)));
    seq.appendEnvironment(range(500, 10));
    const before = { tokens: Array.from(seq.tokens), logprobs: Array.from(seq.logprobs!) };
    seq.compact();
    expect(seq.tokens.buffer.byteLength).toBe(seq.length * Int32Array.BYTES_PER_ELEMENT);
    expect(Array.from(seq.tokens)).toEqual(before.tokens);
    expect(Array.from(seq.logprobs!)).toEqual(before.logprobs);
    expect(Array.from(seq.lossMask).filter((m) => m === 1)).toHaveLength(30);
  });

  it('without logprobs keeps none; a sample without the logprobs it needs is refused', () => {
    const bare = new RolloutSequence([1], false);
    bare.appendGenerated({ tokens: [2, 3], logprobs: null, finishReason: 'stop' });
    expect(bare.logprobs).toBeNull();
    expect(Array.from(bare.tokens)).toEqual([1, 2, 3]);
    const scored = new RolloutSequence([1]);
    expect(() =>
      scored.appendGenerated({ tokens: [2, 3], logprobs: [-1], finishReason: 'stop' }),
    ).toThrow('engine returned 2 tokens but 1 logprobs');
    expect(() =>
      scored.appendGenerated({ tokens: [2, 3], logprobs: null, finishReason: 'stop' }),
    ).toThrow('engine returned 2 tokens but no logprobs');
  });
});
