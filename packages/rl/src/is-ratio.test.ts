import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskedIsRatios, tokenIsRatios, truncatedIsRatios } from './is-ratio.ts';
import { maskedSequenceIsRatios, sequenceIsRatios } from './sequence-ratio.ts';

const LN2 = Math.LN2;
// Tokens with r = exp(logp_train − logp_infer) = 1, 2, 0.5, 3 (docs/recipe.md §2).
const logpInfer = [-1, -2 * LN2, -LN2, -Math.log(3) - 0.1];
const logpTrain = [-1, -LN2, -2 * LN2, -0.1];

describe('token IS ratios (docs/recipe.md §2)', () => {
  it.each([
    { name: 'plain', run: () => tokenIsRatios(logpTrain, logpInfer), expected: [1, 2, 0.5, 3] },
    {
      name: 'truncated at 1.5',
      run: () => truncatedIsRatios(logpTrain, logpInfer, 1.5),
      expected: [1, 1.5, 0.5, 1.5],
    },
    {
      name: 'truncated at default 2.0',
      run: () => truncatedIsRatios(logpTrain, logpInfer),
      expected: [1, 2, 0.5, 2],
    },
  ])('$name', ({ run, expected }) => {
    const ratios = run();
    expected.forEach((value, t) => expect(ratios[t]).toBeCloseTo(value, 12));
  });

  it('masked: drops tokens outside [low, high], bounds inclusive', () => {
    const { ratios, mask, droppedTokens } = maskedIsRatios(logpTrain, logpInfer, 0.5, 1.5);
    expect(Array.from(mask)).toEqual([1, 0, 1, 0]);
    expect(ratios[0]).toBeCloseTo(1, 12);
    expect(ratios[1]).toBe(0);
    expect(ratios[2]).toBeCloseTo(0.5, 12);
    expect(droppedTokens).toBe(2);
  });

  it('rejects mismatched arrays and bad bounds', () => {
    expect(() => tokenIsRatios([0, 0], [0])).toThrow(/lengths differ/);
    expect(() => maskedIsRatios([0], [0], 2, 1)).toThrow(/low <= high/);
    expect(() => truncatedIsRatios([0], [0], 0)).toThrow(/clipMax/);
  });
});

describe('sequence-level IS ratios (docs/recipe.md §2, geometric mean)', () => {
  // rollout 0: log-ratios [0, ln 2] → exp(ln2 / 2) = √2; rollout 1: [−ln 2] → 0.5; rollout 2: empty → 1.
  const offsets = Int32Array.of(0, 2, 3, 3);
  const train = [-1, -LN2, -2 * LN2];
  const infer = [-1, -2 * LN2, -LN2];

  it('is the geometric mean of token ratios; 1 for an empty rollout', () => {
    const ratios = sequenceIsRatios(train, infer, offsets);
    expect(ratios[0]).toBeCloseTo(Math.SQRT2, 12);
    expect(ratios[1]).toBeCloseTo(0.5, 12);
    expect(ratios[2]).toBe(1);
  });

  it('masked: drops whole sequences', () => {
    const { ratios, mask, droppedSequences } = maskedSequenceIsRatios(
      train,
      infer,
      offsets,
      0.8,
      1.2,
    );
    expect(Array.from(mask)).toEqual([0, 0, 1]);
    expect(Array.from(ratios)).toEqual([0, 0, 1]);
    expect(droppedSequences).toBe(2);
  });
});

describe('properties', () => {
  const logprobs = fc.array(fc.double({ min: -20, max: 0, noNaN: true }), {
    minLength: 1,
    maxLength: 50,
  });

  it('ratio = 1 when logprobs are equal (token and sequence level)', () => {
    fc.assert(
      fc.property(logprobs, (logp) => {
        expect(Array.from(tokenIsRatios(logp, logp)).every((r) => r === 1)).toBe(true);
        expect(sequenceIsRatios(logp, logp, Int32Array.of(0, logp.length))[0]).toBe(1);
      }),
    );
  });

  it('truncated ratios never exceed clipMax and equal plain ratios below it', () => {
    fc.assert(
      fc.property(
        logprobs,
        logprobs,
        fc.double({ min: 1, max: 5, noNaN: true }),
        (a, b, clipMax) => {
          const n = Math.min(a.length, b.length);
          const plain = tokenIsRatios(a.slice(0, n), b.slice(0, n));
          const clipped = truncatedIsRatios(a.slice(0, n), b.slice(0, n), clipMax);
          for (let t = 0; t < n; t++) expect(clipped[t]).toBe(Math.min(plain[t]!, clipMax));
        },
      ),
    );
  });
});
