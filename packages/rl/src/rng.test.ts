import { describe, expect, it } from 'vitest';
import { createRng, deriveSeed } from './rng.ts';

describe('createRng', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const draws = (seed: number) => Array.from({ length: 8 }, createRng(seed).next);
    expect(draws(42)).toEqual(draws(42));
    expect(draws(42)).not.toEqual(draws(43));
    expect(draws(2 ** 40)).not.toEqual(draws(0)); // high bits of the seed matter
  });

  it('next() stays in [0, 1) and int() hits both inclusive ends', () => {
    const rng = createRng(7);
    const seen = new Set<number>();
    for (let k = 0; k < 2000; k++) {
      const value = rng.next();
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
      seen.add(rng.int(3, 6));
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
    expect(rng.int(5, 5)).toBe(5);
  });

  it('int() is close to uniform', () => {
    const rng = createRng(123);
    const counts = [0, 0, 0];
    for (let k = 0; k < 30000; k++) counts[rng.int(0, 2)]!++;
    for (const count of counts) expect(Math.abs(count - 10000)).toBeLessThan(400);
  });

  it('rejects bad arguments', () => {
    expect(() => createRng(1.5)).toThrow(RangeError);
    expect(() => createRng(0).int(3, 2)).toThrow(/lo <= hi/);
  });
});

describe('deriveSeed', () => {
  it('depends on both the parent seed and the key, and is stable', () => {
    expect(deriveSeed(1, 'g1')).toBe(deriveSeed(1, 'g1'));
    expect(deriveSeed(1, 'g1')).not.toBe(deriveSeed(1, 'g2'));
    expect(deriveSeed(1, 'g1')).not.toBe(deriveSeed(2, 'g1'));
    expect(Number.isInteger(deriveSeed(9, ''))).toBe(true);
  });
});
