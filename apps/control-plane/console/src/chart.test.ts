// The step charts' scales, without a browser: tick spacing, the y domain, tick labels, gaps and
// the thinning that keeps spikes. The drawn SVG is covered by the browser tests (test/console).
import { describe, expect, it } from 'vitest';
import { MAX_POINTS, niceStep, runs, thin, tickLabel, yScale } from './chart.ts';

describe('niceStep', () => {
  it('is 1, 2 or 5 times a power of ten, at least range / count', () => {
    expect([niceStep(3, 3), niceStep(5, 3), niceStep(12, 3), niceStep(0.9, 3)]).toEqual([
      1, 2, 5, 0.5,
    ]);
    expect(niceStep(70, 3)).toBe(50);
    expect(niceStep(7000, 3)).toBe(5000);
    expect(niceStep(0.0021, 3)).toBeCloseTo(0.001, 12);
  });
});

describe('yScale', () => {
  it('rounds the domain out to whole ticks that cover every value', () => {
    const scale = yScale([0.13, 0.92, 0.5]);
    expect(scale.step).toBe(0.5);
    expect([scale.lo, scale.hi]).toEqual([0, 1]);
    expect(scale.ticks).toEqual([0, 0.5, 1]);
  });

  it('covers negative values', () => {
    const scale = yScale([-3.2, 4.1]);
    expect(scale.step).toBe(5);
    expect(scale.ticks).toEqual([-5, 0, 5]);
  });

  it('opens a flat series around its value, and an empty one to [0, 1]', () => {
    const flat = yScale([2, 2, 2]);
    expect(flat.lo).toBeLessThan(2);
    expect(flat.hi).toBeGreaterThan(2);
    const zero = yScale([0]);
    expect([zero.lo, zero.hi]).toEqual([-1, 1]);
    const empty = yScale([]);
    expect([empty.lo, empty.hi]).toEqual([0, 1]);
  });
});

describe('tickLabel', () => {
  it('shows as many decimals as the spacing needs, so neighbouring ticks differ', () => {
    expect([tickLabel(1.0005, 0.0005), tickLabel(1.001, 0.0005)]).toEqual(['1.0005', '1.0010']);
    expect([tickLabel(10, 5), tickLabel(0.5, 0.5), tickLabel(-0.25, 0.05)]).toEqual([
      '10',
      '0.5',
      '-0.25',
    ]);
  });

  it('falls back to the number format for very fine spacing and huge values', () => {
    expect(tickLabel(4e-7, 1e-7)).toBe('4.00e-7');
    expect(tickLabel(2e6, 1e6)).toBe('2.00e+6');
  });
});

describe('runs', () => {
  it('splits a series at null and non-finite values, dropping them', () => {
    expect(
      runs([
        [0, 1],
        [1, null],
        [2, 3],
        [3, 4],
        [4, Number.NaN],
        [5, Number.POSITIVE_INFINITY],
        [6, 7],
      ]),
    ).toEqual([
      [[0, 1]],
      [
        [2, 3],
        [3, 4],
      ],
      [[6, 7]],
    ]);
    expect(runs([[0, null]])).toEqual([]);
  });
});

describe('thin', () => {
  const identity = (step: number) => step;

  it('keeps a series that fits', () => {
    const points: [number, number][] = Array.from({ length: MAX_POINTS }, (_, i) => [i, i]);
    expect(thin(points, identity)).toBe(points);
  });

  it('keeps each pixel column’s lowest and highest point in step order, so a spike survives', () => {
    // 10 steps per pixel column; one spike at step 4567.
    const points: [number, number][] = Array.from({ length: 10 * MAX_POINTS }, (_, i) => [
      i,
      i === 4567 ? 1000 : Math.sin(i),
    ]);
    const drawn = thin(points, (step) => Math.floor(step / 10));
    expect(drawn.length).toBeLessThanOrEqual(2 * MAX_POINTS);
    expect(drawn).toContainEqual([4567, 1000]);
    expect(Math.max(...drawn.map((p) => p[1]))).toBe(1000);
    const steps = drawn.map((p) => p[0]);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    // Every column is still there, by its extremes.
    const column = points.filter(([st]) => Math.floor(st / 10) === 3).map((p) => p[1]);
    expect(
      drawn
        .filter(([st]) => Math.floor(st / 10) === 3)
        .map((p) => p[1])
        .sort(),
    ).toEqual([Math.min(...column), Math.max(...column)].sort());
  });
});
