// Reference values: scipy 1.17.1 `binomtest(k, n).pvalue` (the exact McNemar test is the
// two-sided binomial test on the discordant pairs) and `wilcoxon(d)` (exact for n ≤ 50 without
// ties); with ties, the brute-force enumeration of all 2^n sign patterns over midranks.
import { describe, expect, it } from 'vitest';
import { mcnemarExact, mcnemarP, signedRankExact } from './paired-tests.ts';

const pairs = (b: number, c: number, same: number) => {
  const first = [...Array(b).fill(true), ...Array(c).fill(false), ...Array(same).fill(true)];
  const second = [...Array(b).fill(false), ...Array(c).fill(true), ...Array(same).fill(true)];
  return [first, second] as [boolean[], boolean[]];
};

describe('mcnemarExact', () => {
  it('matches scipy binomtest on the discordant pairs', () => {
    expect(mcnemarP(5, 15)).toBeCloseTo(0.04138946533203125, 14);
    expect(mcnemarP(12, 30)).toBeCloseTo(0.007915897334896727, 14);
    expect(mcnemarP(6, 0)).toBeCloseTo(0.03125, 14);
    expect(mcnemarP(10, 10)).toBe(1);
    expect(mcnemarP(0, 0)).toBe(1);
  });

  it('counts the discordant pairs in order (first right only, second right only)', () => {
    const [first, second] = pairs(5, 15, 40);
    expect(mcnemarExact(first, second)).toEqual({
      onlyFirst: 5,
      onlySecond: 15,
      p: mcnemarP(5, 15),
    });
    expect(() => mcnemarExact([true], [])).toThrow(/1 answers against 0/);
  });
});

describe('signedRankExact', () => {
  it('matches scipy wilcoxon (exact, no ties)', () => {
    const d = [6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75];
    const r = signedRankExact(new Array(d.length).fill(0), d);
    expect(r.n).toBe(15);
    expect(r.wPlus).toBe(96); // scipy's statistic is min(W+, W−) = 24
    expect(r.p).toBeCloseTo(0.041259765625, 12);
    const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, -10];
    expect(signedRankExact(new Array(10).fill(0), ten).p).toBeCloseTo(0.083984375, 12);
  });

  it('drops zeros and stays exact with tied |d| (midranks; the 2^11 sign patterns enumerated)', () => {
    const d = [1, 1, 1, 2, -1, 0, 3, 1, -2, 1, 1, 0, 2];
    const r = signedRankExact(
      new Array(d.length).fill(5),
      d.map((x) => x + 5),
    );
    expect(r.n).toBe(11);
    expect(r.wPlus).toBe(53);
    expect(r.p).toBeCloseTo(0.0869140625, 12);
    expect(r.meanDifference).toBeCloseTo(10 / 13, 12);
  });

  it('is 1 when nothing differs and symmetric in the direction', () => {
    expect(signedRankExact([1, 2], [1, 2]).p).toBe(1);
    const a = [3, 1, 4, 1, 5, 9, 2, 6];
    const b = [2, 7, 1, 8, 2, 8, 1, 8];
    expect(signedRankExact(a, b).p).toBeCloseTo(signedRankExact(b, a).p, 14);
    expect(() => signedRankExact([1], [NaN])).toThrow(/non-finite/);
  });
});
