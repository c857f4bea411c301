import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anchoredLengthPenalty, ratioExcess } from './length-penalty.ts';

const pen = (excess: number) => 1 - Math.exp(-excess);

// docs/recipe.md §4. Ŵ = winners with s >= 0.5; b_win / b_lose = mean L^ref inside / outside Ŵ;
// hard cap max_j L^ref checked first.
const cases = [
  {
    // Ŵ = {0, 1} (1 has s exactly 0.5); b_win = (100 + 200) / 2 = 150; b_lose = (120 + 300) / 2 = 210; cap 300
    name: 'mixed: verbose winner, winner at s = 0.5, terse loser, hard-capped loser',
    outcomes: {
      baseReward: [1, 1, 0, 1],
      preferenceScore: [0.9, 0.5, 0.8, 0.3],
      length: [225, 80, 40, 500],
      refLength: [100, 200, 120, 300],
    },
    penalties: [pen(225 / 150 - 1), 0, pen(210 / 40 - 1), 1],
    winBaseline: 150,
    loseBaseline: 210,
  },
  {
    // Ŵ = {0}; b_win = 100; a member longer than the cap gets 1 although L/b_win − 1 = 2.01 would give less
    name: 'hard cap is checked before the winner formula',
    outcomes: {
      baseReward: [1, 0],
      preferenceScore: [0.7, 0.2],
      length: [301, 300],
      refLength: [100, 300],
    },
    penalties: [1, 0],
    winBaseline: 100,
    loseBaseline: 300,
  },
  {
    name: 'all rollouts in Ŵ: the complement is empty, b_lose is null',
    outcomes: {
      baseReward: [1, 1],
      preferenceScore: [1, 0.6],
      length: [60, 150],
      refLength: [100, 200],
    },
    penalties: [0, pen(150 / 150 - 1)],
    winBaseline: 150,
    loseBaseline: null,
  },
  {
    name: 'no winners: Ŵ empty, b_win is null',
    outcomes: {
      baseReward: [0, 0],
      preferenceScore: [0.9, 0.9],
      length: [50, 100],
      refLength: [100, 100],
    },
    penalties: [pen(100 / 50 - 1), 0],
    winBaseline: null,
    loseBaseline: 100,
  },
  {
    name: 'winner with s < 0.5 is shaped as a loser',
    outcomes: {
      baseReward: [1, 1],
      preferenceScore: [0.49, 0.5],
      length: [10, 100],
      refLength: [40, 100],
    },
    penalties: [pen(40 / 10 - 1), 0],
    winBaseline: 100,
    loseBaseline: 40,
  },
  {
    name: 'L = 0 loser: b_lose / 0 = ∞ → 1',
    outcomes: { baseReward: [0, 1], preferenceScore: [0, 1], length: [0, 10], refLength: [10, 10] },
    penalties: [1, 0],
    winBaseline: 10,
    loseBaseline: 10,
  },
  {
    name: 'L = 0 and every reference length 0: 0/0 → no penalty',
    outcomes: { baseReward: [0, 1], preferenceScore: [0, 1], length: [0, 0], refLength: [0, 0] },
    penalties: [0, 0],
    winBaseline: 0,
    loseBaseline: 0,
  },
  {
    name: 'one rollout',
    outcomes: { baseReward: [1], preferenceScore: [0.8], length: [100], refLength: [100] },
    penalties: [0],
    winBaseline: 100,
    loseBaseline: null,
  },
];

describe('anchoredLengthPenalty (docs/recipe.md §4)', () => {
  it.each(cases)('$name', ({ outcomes, penalties, winBaseline, loseBaseline }) => {
    const result = anchoredLengthPenalty(outcomes);
    penalties.forEach((value, i) => expect(result.penalties[i]).toBeCloseTo(value, 12));
    expect(result.winBaseline).toBe(winBaseline);
    expect(result.loseBaseline).toBe(loseBaseline);
  });

  it('ratioExcess handles zero denominators', () => {
    expect(ratioExcess(3, 0)).toBe(Infinity);
    expect(ratioExcess(0, 0)).toBe(0);
    expect(ratioExcess(1, 2)).toBe(0);
    expect(ratioExcess(3, 2)).toBe(0.5);
  });

  it('rejects preferences outside [0, 1] and negative lengths', () => {
    const ok = { baseReward: [1], preferenceScore: [0.5], length: [1], refLength: [1] };
    expect(() => anchoredLengthPenalty({ ...ok, preferenceScore: [1.5] })).toThrow(
      /preferenceScore\[0\]/,
    );
    expect(() => anchoredLengthPenalty({ ...ok, length: [-1] })).toThrow(/length\[0\]/);
  });

  it('property: penalties in [0, 1], and 1 whenever L exceeds every reference length', () => {
    const rolloutArb = fc.record({
      baseReward: fc.constantFrom(0, 1),
      preferenceScore: fc.double({ min: 0, max: 1, noNaN: true }),
      length: fc.integer({ min: 0, max: 500 }),
      refLength: fc.integer({ min: 0, max: 500 }),
    });
    fc.assert(
      fc.property(fc.array(rolloutArb, { minLength: 1, maxLength: 16 }), (rollouts) => {
        const pick = <K extends keyof (typeof rollouts)[number]>(key: K) =>
          rollouts.map((r) => r[key]);
        const result = anchoredLengthPenalty({
          baseReward: pick('baseReward'),
          preferenceScore: pick('preferenceScore'),
          length: pick('length'),
          refLength: pick('refLength'),
        });
        const cap = Math.max(...pick('refLength'));
        rollouts.forEach((r, i) => {
          expect(result.penalties[i]).toBeGreaterThanOrEqual(0);
          expect(result.penalties[i]).toBeLessThanOrEqual(1);
          if (r.length > cap) expect(result.penalties[i]).toBe(1);
        });
      }),
    );
  });
});
