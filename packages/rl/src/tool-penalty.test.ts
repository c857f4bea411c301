import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRng, type Rng } from './rng.ts';
import { anchoredToolPenalty } from './tool-penalty.ts';

/** An RNG whose int() returns a chosen end of the range and records the ranges asked for. */
function pickingRng(pick: 'lo' | 'hi'): Rng & { ranges: Array<[number, number]> } {
  const ranges: Array<[number, number]> = [];
  return {
    ranges,
    next: () => 0,
    nextUint32: () => 0,
    int: (lo, hi) => {
      ranges.push([lo, hi]);
      return pick === 'lo' ? lo : hi;
    },
  };
}

const params = { alphaWin: 0.5, alphaLose: 1, betaLose: 0.2 };
const P1 = 1 - Math.exp(-1);
const P2 = 1 - Math.exp(-2);
const P3 = 1 - Math.exp(-3);

// docs/recipe.md §4. c̃ = calls − errors; b_g ∈ {min c̃_W, …, ⌈mean c̃_W⌉}; p = 1 − e^−max(0, c̃ − b_g).
const cases = [
  {
    name: 'mixed group, b_g at the top of {2, 3}',
    usage: { baseReward: [1, 1, 0, 0], toolCalls: [2, 4, 5, 1], toolErrors: [0, 1, 0, 1] }, // c̃ = [2, 3, 5, 0]
    pick: 'hi' as const,
    range: [2, 3],
    baseline: 3,
    penalties: [0, 0, 1 * P2 + 0.2, 0.2],
  },
  {
    name: 'mixed group, b_g at the bottom of {2, 3}',
    usage: { baseReward: [1, 1, 0, 0], toolCalls: [2, 4, 5, 1], toolErrors: [0, 1, 0, 1] },
    pick: 'lo' as const,
    range: [2, 3],
    baseline: 2,
    penalties: [0, 0.5 * P1, 1 * P3 + 0.2, 0.2],
  },
  {
    name: 'all winners (mean 2 → range {1, 2})',
    usage: { baseReward: [1, 1, 1], toolCalls: [1, 1, 4], toolErrors: [0, 0, 0] },
    pick: 'lo' as const,
    range: [1, 2],
    baseline: 1,
    penalties: [0, 0, 0.5 * P3],
  },
  {
    name: 'tool errors equal to tool calls (c̃ = 0)',
    usage: { baseReward: [1, 0], toolCalls: [3, 2], toolErrors: [3, 0] },
    pick: 'hi' as const,
    range: [0, 0],
    baseline: 0,
    penalties: [0, 1 * P2 + 0.2],
  },
  {
    name: 'one rollout',
    usage: { baseReward: [1], toolCalls: [2], toolErrors: [0] },
    pick: 'hi' as const,
    range: [2, 2],
    baseline: 2,
    penalties: [0],
  },
  {
    name: 'ties: every winner used the same count',
    usage: { baseReward: [1, 1, 0], toolCalls: [2, 2, 2], toolErrors: [0, 0, 0] },
    pick: 'hi' as const,
    range: [2, 2],
    baseline: 2,
    penalties: [0, 0, 0.2],
  },
];

describe('anchoredToolPenalty (docs/recipe.md §4)', () => {
  it.each(cases)('$name', ({ usage, pick, range, baseline, penalties }) => {
    const rng = pickingRng(pick);
    const result = anchoredToolPenalty(usage, params, rng);
    expect(rng.ranges).toEqual([range]);
    expect(result.baseline).toBe(baseline);
    penalties.forEach((value, i) => expect(result.penalties[i]).toBeCloseTo(value, 12));
  });

  it('no winners: baseline null, p = 0 for all, losers still get β_lose, RNG untouched', () => {
    const rng = pickingRng('hi');
    const result = anchoredToolPenalty(
      { baseReward: [0, 0], toolCalls: [3, 5], toolErrors: [0, 1] },
      params,
      rng,
    );
    expect(result.baseline).toBeNull();
    expect(Array.from(result.penalties)).toEqual([0.2, 0.2]);
    expect(rng.ranges).toEqual([]);
  });

  it.each([
    {
      usage: { baseReward: [1], toolCalls: [1], toolErrors: [2] },
      error: /toolErrors\[0\]: exceeds toolCalls/,
    },
    { usage: { baseReward: [2], toolCalls: [1], toolErrors: [0] }, error: /baseReward\[0\]/ },
    {
      usage: { baseReward: [1, 0], toolCalls: [1, -1], toolErrors: [0, 0] },
      error: /toolCalls\[1\]/,
    },
    {
      usage: { baseReward: [1], toolCalls: [1, 2], toolErrors: [0] },
      error: /toolCalls: 2 values/,
    },
  ])('rejects $error', ({ usage, error }) => {
    expect(() => anchoredToolPenalty(usage, params, createRng(1))).toThrow(error);
  });

  it('property: b_g within its range, penalties within their ranges, deterministic per seed', () => {
    const rolloutArb = fc
      .record({
        baseReward: fc.constantFrom(0, 1),
        calls: fc.integer({ min: 0, max: 8 }),
        errors: fc.integer({ min: 0, max: 8 }),
      })
      .map((r) => ({ ...r, errors: Math.min(r.errors, r.calls) }));
    const paramsArb = fc.record({
      alphaWin: fc.double({ min: 0, max: 2, noNaN: true }),
      alphaLose: fc.double({ min: 0, max: 2, noNaN: true }),
      betaLose: fc.double({ min: 0, max: 1, noNaN: true }),
    });
    fc.assert(
      fc.property(
        fc.array(rolloutArb, { minLength: 1, maxLength: 16 }),
        paramsArb,
        fc.nat(),
        (rollouts, p, seed) => {
          const usage = {
            baseReward: rollouts.map((r) => r.baseReward),
            toolCalls: rollouts.map((r) => r.calls),
            toolErrors: rollouts.map((r) => r.errors),
          };
          const result = anchoredToolPenalty(usage, p, createRng(seed));
          expect(anchoredToolPenalty(usage, p, createRng(seed))).toEqual(result);
          const winnerCalls = rollouts
            .filter((r) => r.baseReward === 1)
            .map((r) => r.calls - r.errors);
          if (winnerCalls.length === 0) expect(result.baseline).toBeNull();
          else {
            const mean = winnerCalls.reduce((a, b) => a + b, 0) / winnerCalls.length;
            expect(result.baseline).toBeGreaterThanOrEqual(Math.min(...winnerCalls));
            expect(result.baseline).toBeLessThanOrEqual(Math.ceil(mean));
          }
          rollouts.forEach((r, i) => {
            const [low, high] =
              r.baseReward === 1 ? [0, p.alphaWin] : [p.betaLose, p.alphaLose + p.betaLose];
            expect(result.penalties[i]).toBeGreaterThanOrEqual(low - 1e-12);
            expect(result.penalties[i]).toBeLessThanOrEqual(high + 1e-12);
          });
        },
      ),
    );
  });
});
