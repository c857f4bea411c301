import { describe, expect, it } from 'vitest';
import { type Position, comparePositions, firstInOrder, pageRecords } from './record-page.ts';

/** A deterministic pseudo-random sequence (LCG), so a failure reproduces. */
function positions(n: number, seed: number): Position[] {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: n }, (_, i) => ({
    key: next() < 0.2 ? null : Math.floor(next() * 10), // ties and nulls
    tie: i.toString().padStart(6, '0'),
  }));
}

describe('keyset paging', () => {
  it('firstInOrder is the sorted prefix, for any count', () => {
    for (const seed of [1, 2, 3]) {
      const items = positions(500, seed);
      for (const order of ['asc', 'desc'] as const) {
        const cmp = (a: Position, b: Position) => comparePositions(a, b, order);
        const sorted = [...items].sort(cmp);
        for (const count of [1, 7, 51, 499, 600]) {
          expect(firstInOrder(items, count, cmp)).toEqual(sorted.slice(0, count));
        }
      }
    }
  });

  it('pages through every record once, in order, nulls last either way', () => {
    const items = positions(97, 9);
    for (const order of ['asc', 'desc'] as const) {
      const seen: Position[] = [];
      let after: Position | undefined;
      for (;;) {
        const page = pageRecords(items, {
          position: (p) => p,
          order,
          limit: 10,
          ...(after && { after }),
        });
        seen.push(...page.records);
        if (!page.next) break;
        after = page.next;
      }
      expect(seen).toEqual([...items].sort((a, b) => comparePositions(a, b, order)));
      const firstNull = seen.findIndex((p) => p.key === null);
      expect(seen.slice(firstNull).every((p) => p.key === null)).toBe(true);
    }
  });
});
