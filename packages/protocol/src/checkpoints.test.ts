import { describe, expect, it } from 'vitest';
import { mergeRetention, stepsToDrop } from './checkpoints.ts';

const steps = (...s: number[]) => s.map((step) => ({ step }));

describe('stepsToDrop', () => {
  it('keeps everything when no rule is set', () => {
    expect(stepsToDrop(steps(10, 20, 30), {}, new Set())).toEqual([]);
  });

  it('keeps the newest keepLast, multiples of keepEvery, and what is always kept', () => {
    const all = steps(10, 20, 30, 40, 50, 60);
    expect(stepsToDrop(all, { keepLast: 2 }, new Set())).toEqual([10, 20, 30, 40]);
    expect(stepsToDrop(all, { keepLast: 1, keepEvery: 20 }, new Set())).toEqual([10, 30, 50]);
    expect(stepsToDrop(all, { keepLast: 1 }, new Set([30]))).toEqual([10, 20, 40, 50]);
  });

  it('keeps the best by a metric (ties to the later step), ignoring steps without a value', () => {
    const scored = [
      { step: 10, score: 0.5 },
      { step: 20, score: 0.9 },
      { step: 30, score: null },
      { step: 40, score: 0.9 },
      { step: 50, score: 0.1 },
    ];
    const best = (order: 'max' | 'min', count: number) =>
      stepsToDrop(scored, { keepBest: { metric: 'reward/all', order, count } }, new Set([50]));
    expect(best('max', 1)).toEqual([10, 20, 30]);
    expect(best('max', 2)).toEqual([10, 30]);
    expect(best('min', 1)).toEqual([10, 20, 30, 40]);
    expect(best('min', 2)).toEqual([20, 30, 40]);
  });
});

describe('mergeRetention', () => {
  it('takes the spec field by field over the operator defaults', () => {
    expect(mergeRetention({ keepLast: 5 }, { keepLast: 2, keepEvery: 100 })).toEqual({
      keepLast: 5,
      keepEvery: 100,
    });
    expect(mergeRetention(undefined, undefined)).toEqual({});
  });
});
