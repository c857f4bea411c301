// The eval results as one SVG (GET /v1/runs/{id}/results/curve.svg), written by hand so the
// server needs no browser or plotting library: left, accuracy against the tool-call budget b,
// one line per checkpoint with its 95% Wilson band (docs/recipe.md §8.2); right, accuracy
// against dollars per query, every cell a point and the cost–accuracy frontier as a dashed
// line (§8.3). Axes carry units; a legend names the checkpoints.
import type { EvalResults } from '@anneal/protocol';

const WIDTH = 960;
const HEIGHT = 470;
/** Baseline of the first legend row (a second row, if needed, is 18 px lower). */
const LEGEND_Y = 436;
const PANEL = { top: 60, bottom: 70, width: 380, height: 300 };
const LEFT_X = 70;
const RIGHT_X = 540;
/** Colour-blind-safe (Okabe–Ito). */
const COLOURS = [
  '#0072B2',
  '#D55E00',
  '#009E73',
  '#CC79A7',
  '#E69F00',
  '#56B4E9',
  '#F0E442',
  '#000000',
];

export const colourOf = (index: number): string => COLOURS[index % COLOURS.length]!;

const esc = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fmt = (v: number): string => (Math.round(v * 100) / 100).toString();

/** Round tick steps (1, 2, 5 × 10^k) giving at most `count` intervals over [0, max]. */
export function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0];
  const raw = max / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw)!;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if (out.at(-1)! < max) out.push(Number((out.at(-1)! + step).toPrecision(12)));
  return out;
}

interface Axis {
  x0: number;
  /** Data → pixel. */
  x: (v: number) => number;
  y: (v: number) => number;
}

function frame(
  x0: number,
  xTicks: readonly number[],
  xLabel: string,
  yLabel: string,
  title: string,
  tickText: (v: number) => string,
): { axis: Axis; svg: string[] } {
  const top = PANEL.top;
  const bottom = PANEL.top + PANEL.height;
  const xMax = xTicks.at(-1)!;
  const axis: Axis = {
    x0,
    x: (v) => x0 + (xMax === 0 ? PANEL.width / 2 : (v / xMax) * PANEL.width),
    y: (v) => bottom - v * PANEL.height,
  };
  const svg: string[] = [];
  svg.push(`<g class="panel" data-panel="${esc(title)}">`);
  svg.push(
    `<text x="${x0 + PANEL.width / 2}" y="${top - 16}" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  );
  for (const v of [0, 0.2, 0.4, 0.6, 0.8, 1]) {
    const y = axis.y(v);
    svg.push(`<line x1="${x0}" y1="${y}" x2="${x0 + PANEL.width}" y2="${y}" stroke="#e5e5e5"/>`);
    svg.push(
      `<text x="${x0 - 8}" y="${y + 4}" text-anchor="end" font-size="12">${v * 100}%</text>`,
    );
  }
  for (const v of xTicks) {
    const x = axis.x(v);
    svg.push(`<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 5}" stroke="#333"/>`);
    svg.push(
      `<text x="${x}" y="${bottom + 20}" text-anchor="middle" font-size="12">${esc(tickText(v))}</text>`,
    );
  }
  svg.push(
    `<line x1="${x0}" y1="${bottom}" x2="${x0 + PANEL.width}" y2="${bottom}" stroke="#333"/>`,
  );
  svg.push(`<line x1="${x0}" y1="${top}" x2="${x0}" y2="${bottom}" stroke="#333"/>`);
  svg.push(
    `<text x="${x0 + PANEL.width / 2}" y="${bottom + 42}" text-anchor="middle" font-size="13">${esc(xLabel)}</text>`,
  );
  const yMid = top + PANEL.height / 2;
  svg.push(
    `<text x="${x0 - 48}" y="${yMid}" text-anchor="middle" font-size="13" transform="rotate(-90 ${x0 - 48} ${yMid})">${esc(yLabel)}</text>`,
  );
  return { axis, svg };
}

function curvePanel(results: EvalResults): string[] {
  const budgets = results.checkpoints.flatMap((c) => c.cells.map((x) => x.budget));
  const maxBudget = Math.max(1, ...budgets, ...results.budgets);
  const { axis, svg } = frame(
    LEFT_X,
    ticks(maxBudget, Math.min(10, maxBudget)),
    'tool-call budget b (calls per question)',
    'accuracy (%)',
    'Accuracy vs tool budget (95% Wilson band)',
    (v) => String(v),
  );
  for (const c of results.checkpoints) {
    const colour = colourOf(c.index);
    const cells = c.cells.filter((x) => x.accuracy !== null);
    if (cells.length === 0) continue;
    const banded = cells.filter((x) => x.accuracyLow !== null && x.accuracyHigh !== null);
    if (banded.length > 0) {
      const upper = banded.map((x) => `${axis.x(x.budget)},${axis.y(x.accuracyHigh!)}`);
      const lower = banded.map((x) => `${axis.x(x.budget)},${axis.y(x.accuracyLow!)}`).reverse();
      svg.push(
        `<polygon class="band" data-series="${esc(c.label)}" points="${[...upper, ...lower].join(' ')}" fill="${colour}" fill-opacity="0.15" stroke="none"/>`,
      );
    }
    const points = cells.map((x) => `${axis.x(x.budget)},${axis.y(x.accuracy!)}`).join(' ');
    svg.push(
      `<polyline class="curve" data-series="${esc(c.label)}" points="${points}" fill="none" stroke="${colour}" stroke-width="2"/>`,
    );
    for (const x of cells) {
      svg.push(
        `<circle cx="${axis.x(x.budget)}" cy="${axis.y(x.accuracy!)}" r="3" fill="${colour}"><title>${esc(`${c.label} b=${x.budget}: ${fmt(x.accuracy! * 100)}% (n=${x.n})`)}</title></circle>`,
      );
    }
    if (c.knee !== null) {
      const knee = cells.find((x) => x.budget === c.knee);
      if (knee)
        svg.push(
          `<circle class="knee" cx="${axis.x(knee.budget)}" cy="${axis.y(knee.accuracy!)}" r="6" fill="none" stroke="${colour}" stroke-width="1.5"/>`,
        );
    }
  }
  svg.push('</g>');
  return svg;
}

function costPanel(results: EvalResults): string[] {
  const costs = results.checkpoints.flatMap((c) =>
    c.cells.map((x) => x.costPerQueryUsd).filter((v): v is number => v !== null),
  );
  // Cents read better than fractions of a dollar at the recipe's scale (2.0¢ per query).
  const maxCents = Math.max(0, ...costs) * 100;
  const { axis, svg } = frame(
    RIGHT_X,
    ticks(maxCents > 0 ? maxCents : 1),
    'cost per query (US cents)',
    'accuracy (%)',
    'Accuracy vs cost per query',
    (v) => `${fmt(v)}¢`,
  );
  if (costs.length === 0) {
    svg.push(
      `<text x="${RIGHT_X + PANEL.width / 2}" y="${PANEL.top + PANEL.height / 2}" text-anchor="middle" font-size="13" fill="#666">no price table set (spec prices)</text>`,
    );
    svg.push('</g>');
    return svg;
  }
  for (const c of results.checkpoints) {
    for (const x of c.cells) {
      if (x.costPerQueryUsd === null || x.accuracy === null) continue;
      svg.push(
        `<circle class="cost-point" data-series="${esc(c.label)}" cx="${axis.x(x.costPerQueryUsd * 100)}" cy="${axis.y(x.accuracy)}" r="3.5" fill="${colourOf(c.index)}"><title>${esc(`${c.label} b=${x.budget}: ${fmt(x.accuracy * 100)}% at ${fmt(x.costPerQueryUsd * 100)}¢`)}</title></circle>`,
      );
    }
  }
  if (results.frontier.length > 0) {
    const points = results.frontier
      .map((p) => `${axis.x(p.costPerQueryUsd * 100)},${axis.y(p.accuracy)}`)
      .join(' ');
    svg.push(
      `<polyline class="frontier" points="${points}" fill="none" stroke="#333" stroke-dasharray="5 4" stroke-width="1.5"/>`,
    );
  }
  svg.push('</g>');
  return svg;
}

/** Approximate width of legend text at 12 px (DejaVu Sans averages ~7.3 px per character). */
const textWidth = (text: string): number => text.length * 7.3;

function legend(results: EvalResults): string[] {
  const items = [
    ...results.checkpoints.map((c) => ({ label: c.label, colour: colourOf(c.index), dash: false })),
    ...(results.frontier.length > 0
      ? [{ label: 'cost–accuracy frontier', colour: '#333', dash: true }]
      : []),
    { label: '○ knee (within 1 point of best)', colour: 'none', dash: false },
  ];
  const out = ['<g class="legend">'];
  let x = LEFT_X;
  let y = LEGEND_Y;
  for (const item of items) {
    const width = (item.colour === 'none' ? 0 : 28) + textWidth(item.label) + 18;
    if (x > LEFT_X && x + width > WIDTH - 10) {
      x = LEFT_X; // next row
      y += 18;
    }
    if (item.colour !== 'none') {
      out.push(
        `<line x1="${x}" y1="${y - 4}" x2="${x + 22}" y2="${y - 4}" stroke="${item.colour}" stroke-width="2"${item.dash ? ' stroke-dasharray="5 4"' : ''}/>`,
      );
      x += 28;
    }
    out.push(
      `<text class="legend-item" x="${x}" y="${y}" font-size="12">${esc(item.label)}</text>`,
    );
    x += textWidth(item.label) + 18;
  }
  out.push('</g>');
  return out;
}

/** The results chart as a standalone SVG document. */
export function evalChartSvg(results: EvalResults): string {
  const title = `Eval ${results.runId} (${results.datasets.join(', ')})${results.complete ? '' : ' (in progress)'}`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`,
    `<title>${esc(title)}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="18" text-anchor="middle" font-size="13" fill="#444">${esc(title)}</text>`,
    ...curvePanel(results),
    ...costPanel(results),
    ...legend(results),
    '</svg>',
    '',
  ].join('\n');
}
