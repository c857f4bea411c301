import { describe, expect, it } from 'vitest';
import {
  billedPromptTokens,
  costFrontier,
  curveKnee,
  hasPrices,
  preferenceWinRate,
  pricesFor,
  queryCost,
  wilsonInterval,
  Z_95,
} from './stats.ts';

describe('wilsonInterval', () => {
  it('matches hand-computed 95% intervals', () => {
    // 8/10: p = 0.8, z² = 3.8415; centre = 0.99207 / 1.38415 = 0.71673,
    // half = 1.41600 · sqrt(0.016 + 0.0096037) = 0.22658.
    const eight = wilsonInterval(8, 10)!;
    expect(eight.low).toBeCloseTo(0.49016, 4);
    expect(eight.high).toBeCloseTo(0.94331, 4);
    // 0/10: the lower bound is 0, the upper 2·0.13876 = 0.27753 (not degenerate like p ± z·se).
    const zero = wilsonInterval(0, 10)!;
    expect(zero.low).toBeCloseTo(0, 10);
    expect(zero.high).toBeCloseTo(0.27753, 4);
    // symmetric: 10/10 mirrors 0/10
    expect(wilsonInterval(10, 10)!.low).toBeCloseTo(1 - 0.27753, 4);
  });

  it('is exactly 0 at k = 0 and exactly 1 at k = n, for every n', () => {
    // centre ∓ half cancels to a rounding residue for many n (e.g. 2.8e-17 at 0/7, 1 − 1.1e-16
    // at 10/10): a reported bound must be the exact end of [0, 1] there.
    for (let n = 1; n <= 500; n++) {
      expect(wilsonInterval(0, n)!.low, `0/${n}`).toBe(0);
      expect(wilsonInterval(n, n)!.high, `${n}/${n}`).toBe(1);
      // the other bound is the closed form z²/(n + z²) (and its mirror)
      const edge = Z_95 ** 2 / (n + Z_95 ** 2);
      expect(wilsonInterval(0, n)!.high, `0/${n} high`).toBeCloseTo(edge, 12);
      expect(wilsonInterval(n, n)!.low, `${n}/${n} low`).toBeCloseTo(1 - edge, 12);
    }
  });

  it('is null for no questions and refuses impossible counts', () => {
    expect(wilsonInterval(0, 0)).toBeNull();
    expect(() => wilsonInterval(3, 2)).toThrow(/successes/);
    expect(() => wilsonInterval(1, -1)).toThrow(/n: /);
  });
});

describe('curveKnee', () => {
  it('is the smallest budget within one point of the best accuracy', () => {
    const curve = [
      { budget: 0, accuracy: 0.3 },
      { budget: 1, accuracy: 0.5 },
      { budget: 2, accuracy: 0.695 },
      { budget: 3, accuracy: 0.7 },
      { budget: 4, accuracy: 0.705 },
    ];
    // best 0.705; 0.695 ≥ 0.695 → knee at b = 2
    expect(curveKnee(curve)).toBe(2);
    expect(curveKnee(curve, 0.001)).toBe(4);
  });

  it('counts exactly one point below the best as within', () => {
    expect(
      curveKnee([
        { budget: 5, accuracy: 0.61 },
        { budget: 3, accuracy: 0.6 },
      ]),
    ).toBe(3);
  });

  it('ignores unmeasured points; null when none is measured', () => {
    expect(
      curveKnee([
        { budget: 0, accuracy: null },
        { budget: 1, accuracy: 0.2 },
      ]),
    ).toBe(1);
    expect(curveKnee([{ budget: 0, accuracy: null }])).toBeNull();
  });
});

describe('costFrontier', () => {
  it('keeps the points nothing cheaper beats', () => {
    const points = [
      { cost: 0.02, accuracy: 0.739 }, // 0: frontier
      { cost: 0.085, accuracy: 0.678 }, // 1: dominated by 0
      { cost: 0.01, accuracy: 0.5 }, // 2: frontier (cheapest)
      { cost: 0.03, accuracy: 0.8 }, // 3: frontier
      { cost: 0.03, accuracy: 0.7 }, // 4: dominated by 3
      { cost: null, accuracy: 0.9 }, // 5: no price
      { cost: 0.04, accuracy: 0.8 }, // 6: same accuracy, dearer
    ];
    expect(costFrontier(points)).toEqual([2, 0, 3]);
  });

  it('keeps the first of exact ties', () => {
    expect(
      costFrontier([
        { cost: 1, accuracy: 0.5 },
        { cost: 1, accuracy: 0.5 },
      ]),
    ).toEqual([0]);
  });
});

describe('cost', () => {
  it('prices tokens per million and tool calls each', () => {
    const prices = { promptPerMillionTokens: 2, completionPerMillionTokens: 8, perToolCall: 0.005 };
    // 1000·2/1e6 + 500·8/1e6 + 3·0.005 = 0.002 + 0.004 + 0.015
    expect(
      queryCost({ promptTokens: 1000, completionTokens: 500, toolCalls: 3 }, prices),
    ).toBeCloseTo(0.021, 12);
    expect(hasPrices(prices)).toBe(true);
    expect(
      hasPrices({ promptPerMillionTokens: 0, completionPerMillionTokens: 0, perToolCall: 0 }),
    ).toBe(false);
  });

  it('costs each checkpoint at its own prices, field by field over the spec table', () => {
    const spec = {
      prices: { promptPerMillionTokens: 0.5, completionPerMillionTokens: 1.5, perToolCall: 0.005 },
      models: [{}, { prices: { completionPerMillionTokens: 4 } }, { prices: { perToolCall: 0 } }],
    };
    const usage = { promptTokens: 1000, completionTokens: 200, toolCalls: 2 };
    // checkpoint 0, the spec table: 1000·0.5/1e6 + 200·1.5/1e6 + 2·0.005 = 0.0005 + 0.0003 + 0.01
    expect(queryCost(usage, pricesFor(spec, 0))).toBeCloseTo(0.0108, 12);
    // checkpoint 1, completion at 4: 0.0005 + 200·4/1e6 + 0.01 = 0.0005 + 0.0008 + 0.01
    expect(pricesFor(spec, 1)).toEqual({
      promptPerMillionTokens: 0.5,
      completionPerMillionTokens: 4,
      perToolCall: 0.005,
    });
    expect(queryCost(usage, pricesFor(spec, 1))).toBeCloseTo(0.0113, 12);
    // checkpoint 2, free tool calls (an explicit 0 overrides): 0.0005 + 0.0003
    expect(queryCost(usage, pricesFor(spec, 2))).toBeCloseTo(0.0008, 12);
  });

  it('prices a model on its own when the spec has no table, and nothing without either', () => {
    const spec = { models: [{ prices: { perToolCall: 0.01 } }, {}] };
    expect(pricesFor(spec, 0)).toEqual({
      promptPerMillionTokens: 0,
      completionPerMillionTokens: 0,
      perToolCall: 0.01,
    });
    expect(hasPrices(pricesFor(spec, 0))).toBe(true);
    expect(hasPrices(pricesFor(spec, 1))).toBe(false);
    // no `models` (the run model is checkpoint 0): the spec table
    expect(pricesFor({ prices: { perToolCall: 0.02 } }, 0).perToolCall).toBe(0.02);
  });

  it('bills the context before every generated segment', () => {
    // prompt 3 | gen 2 | tool output 2 | gen 1 : requests at context 3 and 7
    expect(billedPromptTokens([0, 0, 0, 1, 1, 0, 0, 1], 3)).toBe(10);
    // one segment: the prompt once
    expect(billedPromptTokens([0, 0, 1, 1], 2)).toBe(2);
    // nothing generated: still the prompt once
    expect(billedPromptTokens([0, 0], 2)).toBe(2);
  });
});

describe('preferenceWinRate', () => {
  it('is the mean σ of the score margins; ties count half', () => {
    // (σ(1) + σ(0)) / 2 = (0.7310585786 + 0.5) / 2
    expect(preferenceWinRate([1, 0], [0, 0])).toBeCloseTo(0.6155292893, 9);
    expect(preferenceWinRate([2], [2])).toBe(0.5);
    // swapping the roles gives the complement (position-agnostic)
    expect(preferenceWinRate([0, 0], [1, 0])).toBeCloseTo(1 - 0.6155292893, 9);
  });

  it('is null for no questions and refuses unpaired scores', () => {
    expect(preferenceWinRate([], [])).toBeNull();
    expect(() => preferenceWinRate([1], [])).toThrow(/scores/);
  });
});
