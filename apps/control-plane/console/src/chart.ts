// Step curves as hand-written SVG: one chart per panel, a line per series, x = step. A few
// hundred lines of SVG beat a chart library for this (no dependency, nothing to keep up to date,
// styled by console.css classes since the CSP allows no inline style).
import { s } from './dom.ts';
import { num } from './format.ts';

export interface Series {
  legend: string;
  /** [step, value], by step; null values are gaps (the backend did not report them). */
  points: [number, number | null][];
}

const W = 360;
const H = 150;
const PAD = { left: 52, right: 10, top: 10, bottom: 22 };
/** More points than this are thinned to one per pixel column (min and max kept). */
export const MAX_POINTS = 2 * (W - PAD.left - PAD.right);

/** 1, 2 or 5 times a power of ten: the tick spacing for about `count` ticks over `range`. */
export function niceStep(range: number, count: number): number {
  const raw = range / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

/** As many decimals as the tick spacing needs (1.0005 next to 1.001, not "1" twice). */
export function tickLabel(value: number, step: number): string {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  if (decimals > 4 || Math.abs(value) >= 1e6) return num(value);
  return value.toFixed(decimals);
}

/** The y domain rounded out to whole ticks, and the ticks. */
export function yScale(values: number[]): {
  lo: number;
  hi: number;
  ticks: number[];
  step: number;
} {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo === Infinity) [lo, hi] = [0, 1];
  if (lo === hi) {
    const pad = lo === 0 ? 1 : Math.abs(lo) * 0.1;
    [lo, hi] = [lo - pad, hi + pad];
  }
  const step = niceStep(hi - lo, 3);
  const first = Math.floor(lo / step);
  const last = Math.ceil(hi / step);
  const ticks = Array.from({ length: last - first + 1 }, (_, i) => (first + i) * step);
  return { lo: first * step, hi: last * step, ticks, step };
}

/** Keeps each pixel column's lowest and highest point, so spikes survive thinning. */
export function thin(points: [number, number][], x: (step: number) => number): [number, number][] {
  if (points.length <= MAX_POINTS) return points;
  const out: [number, number][] = [];
  let column = -1;
  let lo: [number, number] | undefined;
  let hi: [number, number] | undefined;
  const flush = () => {
    if (lo && hi) out.push(...(lo[0] <= hi[0] ? [lo, hi] : [hi, lo]));
  };
  for (const p of points) {
    const c = Math.round(x(p[0]));
    if (c !== column) {
      flush();
      column = c;
      lo = p;
      hi = p;
    } else {
      if (p[1] < lo![1]) lo = p;
      if (p[1] > hi![1]) hi = p;
    }
  }
  flush();
  return out;
}

/** Polyline runs between gaps. */
export function runs(points: [number, number | null][]): [number, number][][] {
  const out: [number, number][][] = [];
  let current: [number, number][] = [];
  for (const [step, value] of points) {
    if (value === null || !Number.isFinite(value)) {
      if (current.length > 0) out.push(current);
      current = [];
    } else current.push([step, value]);
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** `onHover(step)`: the pointer is over the step nearest to it; null when it leaves. */
export function lineChart(
  series: readonly Series[],
  title: string,
  onHover?: (step: number | null) => void,
): SVGSVGElement {
  const steps = series.flatMap((one) => one.points.map((p) => p[0]));
  const values = series.flatMap((one) =>
    one.points.flatMap((p) => (p[1] === null || !Number.isFinite(p[1]) ? [] : [p[1]])),
  );
  const [x0, x1] = steps.length > 0 ? [Math.min(...steps), Math.max(...steps)] : [0, 1];
  const { lo: y0, hi: y1, ticks, step: tickStep } = yScale(values);
  const x = (step: number) =>
    PAD.left + ((step - x0) / (x1 - x0 || 1)) * (W - PAD.left - PAD.right);
  const y = (value: number) =>
    H - PAD.bottom - ((value - y0) / (y1 - y0)) * (H - PAD.top - PAD.bottom);

  const svg = s('svg', {
    viewBox: `0 0 ${W} ${H}`,
    class: 'chart',
    role: 'img',
    'aria-label': title,
  });
  svg.append(s('title', {}, title));
  const grid = s('g', { class: 'grid' });
  for (const value of ticks) {
    grid.append(
      s('line', { x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value) }),
      s('text', { x: PAD.left - 4, y: y(value) + 3, class: 'tick y' }, tickLabel(value, tickStep)),
    );
  }
  for (const step of x0 === x1 ? [x0] : [x0, Math.round((x0 + x1) / 2), x1]) {
    grid.append(s('text', { x: x(step), y: H - 6, class: 'tick x' }, `${step}`));
  }
  svg.append(grid);
  series.forEach((one, i) => {
    for (const run of runs(one.points)) {
      const drawn = thin(run, x);
      const shape =
        drawn.length === 1
          ? s('circle', { cx: x(drawn[0]![0]), cy: y(drawn[0]![1]), r: 2, class: `dot c${i % 6}` })
          : s('polyline', {
              class: `line c${i % 6}`,
              points: drawn.map(([st, v]) => `${x(st).toFixed(1)},${y(v).toFixed(1)}`).join(' '),
            });
      svg.append(shape);
    }
  });
  if (onHover && steps.length > 0)
    addHover(
      svg,
      [...new Set(steps)].sort((a, b) => a - b),
      x,
      onHover,
    );
  return svg;
}

/** A guide line at the step nearest the pointer; the caller shows that step's values. */
function addHover(
  svg: SVGSVGElement,
  steps: number[],
  x: (step: number) => number,
  onHover: (step: number | null) => void,
): void {
  const guide = s('line', {
    class: 'guide',
    y1: PAD.top,
    y2: H - PAD.bottom,
    visibility: 'hidden',
  });
  svg.append(guide);
  svg.addEventListener('pointermove', (event) => {
    const box = svg.getBoundingClientRect();
    const at = ((event.clientX - box.left) / box.width) * W;
    let nearest = steps[0]!;
    for (const step of steps)
      if (Math.abs(x(step) - at) < Math.abs(x(nearest) - at)) nearest = step;
    guide.setAttribute('x1', String(x(nearest)));
    guide.setAttribute('x2', String(x(nearest)));
    guide.setAttribute('visibility', 'visible');
    onHover(nearest);
  });
  svg.addEventListener('pointerleave', () => {
    guide.setAttribute('visibility', 'hidden');
    onHover(null);
  });
}
