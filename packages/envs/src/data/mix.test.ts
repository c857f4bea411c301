import { describe, expect, it } from 'vitest';
import { seededRng } from '../random.ts';
import { DEFAULT_MIX_WEIGHTS, PromptMix } from './mix.ts';

const qa = Array.from({ length: 50 }, (_, i) => `qa${i}`);
const rubric = ['r0', 'r1', 'r2'];
const sources = () => [
  { name: 'qa', weight: DEFAULT_MIX_WEIGHTS['qa'] as number, items: qa },
  { name: 'rubric', weight: DEFAULT_MIX_WEIGHTS['rubric'] as number, items: rubric },
];

describe('PromptMix (docs/recipe.md §3, 90/10)', () => {
  it('draws sources i.i.d. by weight', () => {
    const mix = new PromptMix(sources(), seededRng(1));
    const draws = Array.from({ length: 5000 }, () => mix.next());
    const rubricShare = draws.filter((d) => d.source === 'rubric').length / draws.length;
    expect(rubricShare).toBeGreaterThan(0.085);
    expect(rubricShare).toBeLessThan(0.115);
    expect(draws.every((d) => (d.source === 'qa' ? qa : rubric).includes(d.item))).toBe(true);
  });

  it('batches follow the weights as closely as integers allow', () => {
    const mix = new PromptMix(sources(), seededRng(2));
    const counts = (n: number) => mix.batch(n).filter((d) => d.source === 'rubric').length;
    expect(counts(20)).toBe(2);
    const small = Array.from({ length: 400 }, () => counts(5)); // 0.5 expected per batch of 5
    expect(small.every((c) => c === 0 || c === 1)).toBe(true);
    const mean = small.reduce((a, b) => a + b, 0) / small.length;
    expect(mean).toBeGreaterThan(0.42);
    expect(mean).toBeLessThan(0.58);
  });

  it('covers every item of a source once per epoch', () => {
    const mix = new PromptMix([{ name: 'qa', weight: 1, items: qa }], seededRng(3));
    const epoch = Array.from({ length: qa.length }, () => mix.next().item);
    expect(new Set(epoch).size).toBe(qa.length);
  });

  it('is deterministic for a seed', () => {
    const a = new PromptMix(sources(), seededRng(9)).batch(30);
    const b = new PromptMix(sources(), seededRng(9)).batch(30);
    expect(a).toEqual(b);
  });

  it('rejects bad weights and empty weighted sources', () => {
    expect(() => new PromptMix([{ name: 'qa', weight: -1, items: qa }], seededRng(1))).toThrow(
      /'qa': weight must be/,
    );
    expect(() => new PromptMix([{ name: 'rubric', weight: 0.1, items: [] }], seededRng(1))).toThrow(
      /'rubric' has weight 0.1 but no items/,
    );
    expect(() => new PromptMix([{ name: 'qa', weight: 0, items: qa }], seededRng(1))).toThrow(
      /all weights are 0/,
    );
  });
});
