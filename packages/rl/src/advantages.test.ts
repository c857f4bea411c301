import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { batchGroupAdvantages, groupAdvantages, isZeroVarianceGroup } from './advantages.ts';

// docs/recipe.md §2: Â_i = R_i − mean R, optionally / (std R + 1e-6), population std.
const cases: Array<{ name: string; rewards: number[]; normalizeStd: boolean; expected: number[] }> =
  [
    {
      name: 'two winners, two losers',
      rewards: [1, 0, 0, 1],
      normalizeStd: false,
      expected: [0.5, -0.5, -0.5, 0.5],
    },
    {
      name: 'std-normalised (std 0.5)',
      rewards: [1, 0, 0, 1],
      normalizeStd: true,
      expected: [0.5 / 0.500001, -0.5 / 0.500001, -0.5 / 0.500001, 0.5 / 0.500001],
    },
    {
      name: 'uneven rewards',
      rewards: [0.3, 0.1, 0.2],
      normalizeStd: false,
      expected: [0.1, -0.1, 0],
    },
    { name: 'one rollout', rewards: [0.7], normalizeStd: true, expected: [0] },
    {
      name: 'ties (zero variance)',
      rewards: [0.1, 0.1, 0.1],
      normalizeStd: true,
      expected: [0, 0, 0],
    },
    { name: 'empty group', rewards: [], normalizeStd: false, expected: [] },
  ];

describe('groupAdvantages', () => {
  it.each(cases)('$name', ({ rewards, normalizeStd, expected }) => {
    const advantages = groupAdvantages(rewards, { normalizeStd });
    expect(advantages).toHaveLength(expected.length);
    expected.forEach((value, i) => expect(advantages[i]).toBeCloseTo(value, 12));
  });

  it('gives exactly 0 (not rounding noise) for tied groups', () => {
    // (0.1 + 0.1 + 0.1) / 3 != 0.1 in floating point; the tie rule must still give exact zeros.
    expect(Array.from(groupAdvantages([0.1, 0.1, 0.1]))).toEqual([0, 0, 0]);
  });

  it('property: advantages sum to 0', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 1, maxLength: 64 }),
        fc.boolean(),
        (rewards, normalizeStd) => {
          const sum = groupAdvantages(rewards, { normalizeStd }).reduce((a, b) => a + b, 0);
          expect(Math.abs(sum)).toBeLessThan(1e-9 * rewards.length * (normalizeStd ? 1e6 : 10));
        },
      ),
    );
  });
});

describe('isZeroVarianceGroup / batchGroupAdvantages', () => {
  it('detects ties, single rollouts and empty groups', () => {
    expect(isZeroVarianceGroup([0.5, 0.5])).toBe(true);
    expect(isZeroVarianceGroup([0.5])).toBe(true);
    expect(isZeroVarianceGroup([])).toBe(true);
    expect(isZeroVarianceGroup([0.5, 0.4])).toBe(false);
  });

  it('computes many groups in one flat array and counts zero-variance groups', () => {
    const rewards = [1, 0, 0.5, 0.5, 0.5, 2];
    const { advantages, zeroVarianceGroups } = batchGroupAdvantages(
      rewards,
      Int32Array.of(0, 2, 5, 6),
    );
    expect(Array.from(advantages)).toEqual([0.5, -0.5, 0, 0, 0, 0]);
    expect(zeroVarianceGroups).toBe(2);
  });

  it('rejects offsets that do not cover the rewards', () => {
    expect(() => batchGroupAdvantages([1, 2, 3], Int32Array.of(0, 2))).toThrow(/last entry/);
  });
});
