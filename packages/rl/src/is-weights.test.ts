import { describe, expect, it } from 'vitest';
import { isWeights, needsIsWeights, weightedObjective, type IsOptions } from './is-weights.ts';
import { perTokenAdvantages, weightedTokenAdvantages } from './token-advantages.ts';

const PLAIN: IsOptions = {
  level: 'token',
  truncate: false,
  clipMax: 2,
  mask: false,
  maskLow: 0.5,
  maskHigh: 2,
};
// Token ratios r = exp(logp_train − logp_infer) = [1, 2.5 | 0.25, 1.8] (docs/recipe.md §2.2).
const ratios = [1, 2.5, 0.25, 1.8];
const logpInfer = Float64Array.from(ratios, (r) => -1 - Math.log(r));
const logpTrain = new Float64Array(4).fill(-1);
const offsets = Int32Array.from([0, 2, 4]);

describe('isWeights, token level (docs/recipe.md §2.2)', () => {
  it('plain options need no weights; any option does', () => {
    expect(needsIsWeights(PLAIN)).toBe(false);
    expect(needsIsWeights({ ...PLAIN, truncate: true })).toBe(true);
    expect(needsIsWeights({ ...PLAIN, mask: true })).toBe(true);
    expect(needsIsWeights({ ...PLAIN, level: 'sequence' })).toBe(true);
  });

  it('truncate: w = min(r, clipMax), log(w/r) = log(clipMax/r) where clipped', () => {
    const w = isWeights({ ...PLAIN, truncate: true, clipMax: 1.5 }, logpTrain, logpInfer, offsets);
    [1, 1.5, 0.25, 1.5].forEach((v, t) => expect(w.weights[t]).toBeCloseTo(v, 12));
    expect(w.logFactors[0]).toBe(0); // w = r exactly: factor exactly 1
    expect(w.logFactors[1]).toBeCloseTo(Math.log(1.5 / 2.5), 12);
    expect(w.truncatedFraction).toBe(2 / 4);
    expect(w.maskedFraction).toBeNull();
  });

  it('mask: w = 0 outside [maskLow, maskHigh], log(w/r) = −∞', () => {
    const w = isWeights({ ...PLAIN, mask: true }, logpTrain, logpInfer, offsets);
    [1, 0, 0, 1.8].forEach((v, t) => expect(w.weights[t]).toBeCloseTo(v, 12));
    expect([...w.logFactors]).toEqual([0, -Infinity, -Infinity, 0]);
    expect(w.maskedFraction).toBe(2 / 4);
    expect(w.truncatedFraction).toBeNull();
  });

  it('truncate + mask at the default bounds: a masked-high token is not truncated', () => {
    // 2.5 > clipMax 2 but it leaves [0.5, 2]: dropped, not clipped; nothing kept is above 2
    const both = isWeights({ ...PLAIN, truncate: true, mask: true }, logpTrain, logpInfer, offsets);
    expect(both.maskedFraction).toBe(2 / 4);
    expect(both.truncatedFraction).toBe(0);
    const tighter = { ...PLAIN, truncate: true, clipMax: 1.5, mask: true };
    const w = isWeights(tighter, logpTrain, logpInfer, offsets);
    expect(w.truncatedFraction).toBe(1 / 4); // only the kept 1.8
    [1, 0, 0, 1.5].forEach((v, t) => expect(w.weights[t]).toBeCloseTo(v, 12));
  });
});

describe('isWeights, sequence level (docs/recipe.md §2.2, GSPO)', () => {
  // s_0 = sqrt(1 · 2.5) = 1.5811, s_1 = sqrt(0.25 · 1.8) = 0.6708
  const s = [Math.sqrt(2.5), Math.sqrt(0.45)];
  const sequence: IsOptions = { ...PLAIN, level: 'sequence' };

  it('every token of rollout i weighs s_i; log(w/r) = log s_i − log r_t', () => {
    const w = isWeights(sequence, logpTrain, logpInfer, offsets);
    [s[0], s[0], s[1], s[1]].forEach((v, t) => expect(w.weights[t]).toBeCloseTo(v!, 12));
    ratios.forEach((r, t) =>
      expect(w.logFactors[t]).toBeCloseTo(Math.log(s[t < 2 ? 0 : 1]! / r), 12),
    );
  });

  it('masks and truncates per sequence, masked sequences never counted as truncated', () => {
    const w = isWeights(
      { ...sequence, truncate: true, clipMax: 1.2, mask: true, maskHigh: 1.5 },
      logpTrain,
      logpInfer,
      offsets,
    );
    // s_0 = 1.58 leaves [0.5, 1.5] (dropped); s_1 = 0.67 is kept and under the clip
    expect(w.maskedFraction).toBe(1 / 2);
    expect(w.truncatedFraction).toBe(0);
    [0, 0, s[1], s[1]].forEach((v, t) => expect(w.weights[t]).toBeCloseTo(v!, 12));
  });
});

describe('weightedObjective (J_w, docs/recipe.md §2.2)', () => {
  it('is 1/N Σ_i Â_i · mean_t w_t, and J itself when w = r', () => {
    const weights = Float64Array.from([1, 1.5, 0.25, 1.5]);
    // (0.5 · 1.25 − 0.5 · 0.875) / 2
    expect(weightedObjective(offsets, [0.5, -0.5], weights)).toBeCloseTo(0.09375, 12);
    expect(weightedObjective(Int32Array.from([0, 0]), [1], new Float64Array(0))).toBe(0);
    expect(() => weightedObjective(offsets, [1], weights)).toThrow(/advantages: 1 values/);
  });
});

describe('weightedTokenAdvantages (docs/recipe.md §2.5)', () => {
  it('without IS options (log factor 0) is perTokenAdvantages exactly', () => {
    const zero = new Float64Array(4);
    const plain = perTokenAdvantages([0.5, -0.5], offsets, 'sum');
    expect([...weightedTokenAdvantages([0.5, -0.5], offsets, 'sum', zero)]).toEqual([...plain]);
  });

  // One rollout of 1000 tokens, one of them 89 nats below the sampler: log s = −0.089 and that
  // token's log(s/r) = 88.911, e^88.911 ≈ 4.1e38 > float32 max 3.4e38.
  const T = 1000;
  const one = Int32Array.from([0, T]);
  const farInfer = new Float64Array(T).fill(-90);
  farInfer[T - 1] = -1;
  const farTrain = new Float64Array(T).fill(-90);
  const far = isWeights({ ...PLAIN, level: 'sequence' }, farTrain, farInfer, one);

  it('stays finite where w_t/r_t alone overflows float32', () => {
    expect(Math.fround(Math.exp(far.logFactors[T - 1]!))).toBe(Infinity);
    const out = weightedTokenAdvantages([1], one, 'sum', far.logFactors);
    expect(out[T - 1]! / (Math.exp(88.911) / T)).toBeCloseTo(1, 6); // ≈ 4.1e35
    expect(out.every(Number.isFinite)).toBe(true);
  });

  it('a zero advantage or a dropped token sends exactly 0', () => {
    const out = weightedTokenAdvantages([0], one, 'sum', far.logFactors);
    expect(out.every((a) => a === 0)).toBe(true);
    const dropped = Float64Array.from([0, -Infinity, 0, 0]);
    expect([...weightedTokenAdvantages([1, 1], offsets, 'sum', dropped)]).toEqual([
      0.25, 0, 0.25, 0.25,
    ]);
  });

  it('gives ±Infinity, for the caller to refuse, where even the product cannot fit', () => {
    const huge = Float64Array.from([0, 200, 0, 0]);
    expect(weightedTokenAdvantages([1, 1], offsets, 'sum', huge)[1]).toBe(Infinity);
    expect(() => weightedTokenAdvantages([1, 1], offsets, 'sum', new Float64Array(3))).toThrow(
      /offsets: last entry 4 != token count 3|logFactors/,
    );
  });
});
