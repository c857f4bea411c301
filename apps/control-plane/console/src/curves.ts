// The run page's step curves: the run's step records (GET /v1/runs/{id}/metrics, paged), kept
// current by the `step:committed` events of its stream, drawn as the catalogue's panels for the
// run's kind: the Run dashboard's panels first, every other recorded metric on demand.
import { apiJson, runPath, withQuery } from './api.ts';
import type { ConsoleCatalogue, StepHistory, StepMetricPanel } from '@anneal/protocol';
import { type Series, lineChart } from './chart.ts';
import { fill, h } from './dom.ts';
import { num } from './format.ts';

type Metrics = Record<string, number | null>;
const PAGE = 10_000;

export class StepCurves {
  readonly element = h('section', { class: 'curves', 'aria-label': 'Step curves' });
  private readonly steps = new Map<number, Metrics>();
  private showAll = false;
  private pending = false;

  constructor(
    private readonly runId: string,
    private readonly kind: string,
    private readonly catalogue: ConsoleCatalogue,
  ) {}

  async load(signal: AbortSignal): Promise<void> {
    for (let fromStep = 0; ;) {
      const page = await apiJson<StepHistory>(
        withQuery(`${runPath(this.runId)}/metrics`, { fromStep, limit: PAGE }),
        signal,
      );
      for (const record of page.steps) this.steps.set(record.step, record.metrics);
      const last = page.steps.at(-1);
      if (page.steps.length < PAGE || !last) break;
      fromStep = last.step + 1;
    }
    this.render();
  }

  /** A committed step (live or replayed); redrawn at most once per animation frame. */
  add(step: number, metrics: Metrics): void {
    this.steps.set(step, metrics);
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  /** Steps a guardrail rollback took back: they are committed again as the run goes on. */
  remove(steps: readonly number[]): void {
    for (const step of steps) this.steps.delete(step);
    this.render();
  }

  private series(keys: { key: string; legend: string }[], ordered: [number, Metrics][]): Series[] {
    return keys
      .map(({ key, legend }) => ({
        legend: legend || key,
        points: ordered
          .filter(([, m]) => key in m)
          .map(([st, m]) => [st, m[key] ?? null] as [number, number | null]),
      }))
      .filter((one) => one.points.some(([, v]) => v !== null));
  }

  private panel(title: string, help: string, series: Series[]): HTMLElement {
    const label = (one: Series) =>
      series.length > 1 || one.legend !== title ? `${one.legend} ` : '';
    const values = series.map((one) => h('b', {}, num(one.points.at(-1)?.[1])));
    const at = h('span', { class: 'sub' });
    const legend = h(
      'ul',
      { class: 'legend' },
      ...series.map((one, i) => h('li', { class: `c${i % 6}` }, label(one), values[i])),
      h('li', {}, at),
    );
    // Hovering shows that step's values in the legend; leaving, the latest again.
    const hover = (step: number | null) => {
      series.forEach((one, i) => {
        const point = step === null ? one.points.at(-1) : one.points.find((p) => p[0] === step);
        fill(values[i]!, num(point?.[1]));
      });
      fill(at, step === null ? '' : `step ${step}`);
    };
    return h(
      'figure',
      { class: 'panel', 'data-panel': title },
      h('figcaption', { title: help }, title),
      legend,
      lineChart(series, title, hover),
    );
  }

  render(): void {
    const ordered = [...this.steps.entries()].sort((a, b) => a[0] - b[0]);
    if (ordered.length === 0) {
      fill(
        this.element,
        h('h2', {}, 'Step curves'),
        h('p', { class: 'empty' }, 'No step committed yet.'),
      );
      return;
    }
    const forKind = this.catalogue.panels.filter((p) => p.kinds.includes(this.kind));
    const known = new Set(this.catalogue.panels.flatMap((p) => p.lines.map((l) => l.key)));
    const drawn = (panels: StepMetricPanel[]) =>
      panels.flatMap((p) => {
        const series = this.series(p.lines, ordered);
        return series.length > 0 ? [this.panel(p.title, p.help, series)] : [];
      });
    const sections = this.catalogue.sections.flatMap((section) => {
      const panels = drawn(
        forKind.filter((p) => p.section === section.id && (this.showAll || p.featured)),
      );
      return panels.length > 0
        ? [h('h3', {}, section.title), h('div', { class: 'panels' }, ...panels)]
        : [];
    });
    const unknown = [...new Set(ordered.flatMap(([, m]) => Object.keys(m)))].filter(
      (k) => !known.has(k),
    );
    const other = this.showAll
      ? drawn(
          unknown.map((key) => ({
            id: key,
            title: key,
            section: 'other',
            featured: false,
            unit: '',
            kinds: [],
            help: key,
            lines: [{ key, legend: '' }],
          })),
        )
      : [];
    const toggle = h(
      'button',
      { type: 'button', class: 'link' },
      this.showAll ? 'Dashboard metrics only' : 'All step metrics',
    );
    toggle.addEventListener('click', () => {
      this.showAll = !this.showAll;
      this.render();
    });
    fill(
      this.element,
      h(
        'h2',
        {},
        'Step curves ',
        h('span', { class: 'sub' }, `${ordered.length} steps`),
        ' ',
        toggle,
      ),
      ...sections,
      ...(other.length > 0 ? [h('h3', {}, 'Other'), h('div', { class: 'panels' }, ...other)] : []),
    );
  }
}
