// Runs of one kind compared (GET /v1/runs/compare): a table of the spec fields that differ and
// each run's latest step, then the step curves of every run overlaid, one chart per dashboard
// metric of the kind, each run's differing fields as its legend. Shown for runs picked from the
// list (#/compare?run=…) and under a sweep (#/sweeps/{id}).
import type { RunComparison, StepHistory } from '@anneal/protocol';
import { apiJson, runPath, withQuery } from '../api.ts';
import { catalogue } from '../catalogue.ts';
import { type Series, lineChart } from '../chart.ts';
import { errorLine, fill, h } from '../dom.ts';
import { num } from '../format.ts';
import { runHref } from '../router.ts';
import { stateBadge } from './runs.ts';

type Metrics = Record<string, number | null>;
const STEPS = 10_000;

const valueText = (value: unknown) =>
  value === undefined ? '–' : typeof value === 'number' ? num(value) : JSON.stringify(value);

/** A run's legend: its differing fields (`path=value`, `·`-separated), else its name or id. */
export function legendOf(c: RunComparison, i: number): string {
  const run = c.runs[i]!;
  const parts = c.fields.map((f) => `${f}=${valueText(run.differences[f])}`);
  return parts.length > 0 ? parts.join(' · ') : (run.name ?? run.id);
}

function fieldTable(c: RunComparison): HTMLElement {
  return h(
    'table',
    { class: 'runs compare' },
    h(
      'thead',
      {},
      h('tr', {}, ...['', 'run', 'state', 'step', ...c.fields].map((col) => h('th', {}, col))),
    ),
    h(
      'tbody',
      {},
      ...c.runs.map((run, i) =>
        h(
          'tr',
          { 'data-run': run.id },
          h('td', { class: `swatch c${i % 6}` }, '■'),
          h('td', {}, h('a', { href: runHref(run.id) }, run.name ?? run.id)),
          h('td', {}, stateBadge(run.state)),
          h('td', { class: 'num' }, run.final?.step ?? '–'),
          ...c.fields.map((f) => h('td', { class: 'num' }, valueText(run.differences[f]))),
        ),
      ),
    ),
  );
}

async function stepsOf(id: string, signal: AbortSignal): Promise<[number, Metrics][]> {
  const page = await apiJson<StepHistory>(
    withQuery(`${runPath(id)}/metrics`, { limit: STEPS }),
    signal,
  );
  return page.steps.map((record) => [record.step, record.metrics]);
}

function panel(title: string, help: string, series: Series[]): HTMLElement {
  return h(
    'figure',
    { class: 'panel', 'data-panel': title },
    h('figcaption', { title: help }, title),
    h(
      'ul',
      { class: 'legend' },
      ...series.map((one, i) =>
        h('li', { class: `c${i % 6}` }, `${one.legend} `, h('b', {}, num(one.points.at(-1)?.[1]))),
      ),
    ),
    lineChart(series, title),
  );
}

/** Fills `into` with the comparison of `runIds` (the API refuses runs of two kinds). */
export async function renderComparison(
  into: HTMLElement,
  runIds: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  fill(into, h('p', { class: 'sub' }, 'Loading…'));
  let comparison: RunComparison;
  let histories: [number, Metrics][][];
  try {
    comparison = await apiJson<RunComparison>(
      withQuery('/v1/runs/compare', { run: runIds }),
      signal,
    );
    histories = await Promise.all(runIds.map((id) => stepsOf(id, signal)));
  } catch (error) {
    fill(into, errorLine(error));
    return;
  }
  const cat = await catalogue();
  const legends = comparison.runs.map((_, i) => legendOf(comparison, i));
  const panels = cat.panels
    .filter((p) => p.featured && p.kinds.includes(comparison.kind))
    .flatMap((p) =>
      p.lines.map((line) => {
        const title = p.lines.length > 1 ? `${p.title}: ${line.legend || line.key}` : p.title;
        const series = histories.map((steps, i) => ({
          legend: legends[i]!,
          points: steps
            .filter(([, m]) => line.key in m)
            .map(([st, m]) => [st, m[line.key] ?? null] as [number, number | null]),
        }));
        return { title, help: p.help, series };
      }),
    )
    .filter((one) => one.series.some((s) => s.points.some(([, v]) => v !== null)));
  fill(
    into,
    h(
      'p',
      { class: 'sub' },
      `${comparison.runs.length} ${comparison.kind} runs; `,
      comparison.fields.length > 0
        ? `${comparison.fields.length} spec fields differ (the legend of each curve)`
        : 'their specs are the same',
    ),
    fieldTable(comparison),
    h('h2', {}, 'Step curves'),
    panels.length === 0
      ? h('p', { class: 'empty' }, 'No step committed yet.')
      : h(
          'div',
          { class: 'panels compare-panels' },
          ...panels.map((p) => panel(p.title, p.help, p.series)),
        ),
  );
}

/** #/compare?run=…&run=…: runs picked from the list. */
export async function renderCompare(
  main: HTMLElement,
  runIds: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  const body = h('div', { class: 'compare-body' });
  fill(main, h('h1', {}, 'Compare runs'), body);
  if (runIds.length < 2) {
    fill(body, h('p', { class: 'empty' }, 'Pick two or more runs of one kind on the runs list.'));
    return;
  }
  await renderComparison(body, runIds, signal);
}
